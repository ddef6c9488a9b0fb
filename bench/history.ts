/**
 * What a workflow costs Temporal, read from its real history: events by type, workflow tasks,
 * signals by name, timers, and an estimate of Temporal Cloud's billable actions
 * (docs.temporal.io/cloud/actions): a workflow start, each signal (a signal-with-start that
 * starts the workflow is one action in all), each timer started, each search-attribute
 * upsert, each activity scheduled or retried, and all local-activity markers of one workflow
 * task as one action. Workflow tasks are not billed but are the cluster's work: each is
 * scheduled, started and completed — three events, several persistence writes.
 */
import type { Client } from '@temporalio/client';
import proto, { type temporal } from '@temporalio/proto';

// A CommonJS module: its namespaces come through the default import under Node's ESM.
const EventType = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface HistoryCost {
  readonly events: number;
  readonly byType: Readonly<Record<string, number>>;
  readonly signals: Readonly<Record<string, number>>;
  readonly workflowTasks: number;
  readonly timersStarted: number;
  readonly markers: number;
  readonly actions: number;
}

export async function fetchEvents(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return history.events ?? [];
}

/** Cost of `events`, a slice of one history (`all` is the whole history, for context). */
export function historyCost(events: readonly HistoryEvent[], all: readonly HistoryEvent[] = events): HistoryCost {
  const byType: Record<string, number> = {};
  const signals: Record<string, number> = {};
  const markerTasks = new Set<string>();
  let actions = 0;
  for (const event of events) {
    const type = typeName(event.eventType);
    byType[type] = (byType[type] ?? 0) + 1;
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
      case EventType.EVENT_TYPE_TIMER_STARTED:
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        actions += 1;
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        actions += Math.max(0, (event.activityTaskStartedEventAttributes?.attempt ?? 1) - 1); // retries
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: {
        const name = event.workflowExecutionSignaledEventAttributes?.signalName ?? '?';
        signals[name] = (signals[name] ?? 0) + 1;
        if (!deliveredWithStart(event, all)) actions += 1;
        break;
      }
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        markerTasks.add(String(event.markerRecordedEventAttributes?.workflowTaskCompletedEventId ?? event.eventId));
        break;
    }
  }
  actions += markerTasks.size;
  return {
    events: events.length,
    byType,
    signals,
    workflowTasks: byType.WorkflowTaskCompleted ?? 0,
    timersStarted: byType.TimerStarted ?? 0,
    markers: byType.MarkerRecorded ?? 0,
    actions,
  };
}

/** A signal-with-start that started the run puts its signal right after the start event. */
function deliveredWithStart(event: HistoryEvent, all: readonly HistoryEvent[]): boolean {
  return Number(event.eventId) === 2 && all[0]?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED;
}

/** `EVENT_TYPE_WORKFLOW_TASK_COMPLETED` → `WorkflowTaskCompleted`. */
export function typeName(type: temporal.api.enums.v1.EventType | null | undefined): string {
  const name = EventType[type ?? 0] ?? `Unknown${type}`;
  return name
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

/** Adds up costs (e.g. of many devices), then `scale` divides (per device, per wake). */
export function addCosts(costs: readonly HistoryCost[]): HistoryCost {
  const add = (key: 'byType' | 'signals') => {
    const out: Record<string, number> = {};
    for (const c of costs) for (const [k, v] of Object.entries(c[key])) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  const total = (key: 'events' | 'workflowTasks' | 'timersStarted' | 'markers' | 'actions') => costs.reduce((a, c) => a + c[key], 0);
  return {
    events: total('events'),
    byType: add('byType'),
    signals: add('signals'),
    workflowTasks: total('workflowTasks'),
    timersStarted: total('timersStarted'),
    markers: total('markers'),
    actions: total('actions'),
  };
}

export function scaleCost(cost: HistoryCost, divisor: number): HistoryCost {
  const div = (v: number) => (divisor === 0 ? Number.NaN : v / divisor);
  const each = (r: Readonly<Record<string, number>>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, div(v)]));
  return {
    events: div(cost.events),
    byType: each(cost.byType),
    signals: each(cost.signals),
    workflowTasks: div(cost.workflowTasks),
    timersStarted: div(cost.timersStarted),
    markers: div(cost.markers),
    actions: div(cost.actions),
  };
}
