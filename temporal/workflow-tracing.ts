/**
 * Workflow interceptors, bundled with the workflows and run in the workflow sandbox: Temporal's
 * OpenTelemetry interceptors, applied only where a trace already is — a run or a signal whose
 * header carries a trace context (temporal/tracing.ts), and the calls a workflow makes while one
 * of those spans is active. Everything else runs exactly as without interceptors, so histories
 * recorded without them replay unchanged, and an untraced run holds no span. Deterministic: the
 * decision reads the history's headers and the workflow's own context, nothing else.
 */
import * as otel from '@opentelemetry/api';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type {
  ActivityInput,
  ContinueAsNewInput,
  LocalActivityInput,
  Next,
  SignalInput,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

const traceHeader = '_tracer-data';

const traced = (headers: Record<string, unknown>) => Object.prototype.hasOwnProperty.call(headers, traceHeader);
const inTrace = () => otel.trace.getSpan(otel.context.active())?.isRecording() === true;

class TracedInbound implements WorkflowInboundCallsInterceptor {
  private readonly otel = new OpenTelemetryInboundInterceptor();

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    return traced(input.headers) ? this.otel.execute(input, next) : next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    return traced(input.headers) ? this.otel.handleSignal(input, next) : next(input);
  }
}

class TracedOutbound implements WorkflowOutboundCallsInterceptor {
  private readonly otel = new OpenTelemetryOutboundInterceptor();

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
    return inTrace() ? this.otel.scheduleActivity(input, next) : next(input);
  }

  scheduleLocalActivity(input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>): Promise<unknown> {
    return inTrace() ? this.otel.scheduleLocalActivity(input, next) : next(input);
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ): Promise<[Promise<string>, Promise<unknown>]> {
    return inTrace() ? this.otel.startChildWorkflowExecution(input, next) : next(input);
  }

  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>): Promise<never> {
    return inTrace() ? this.otel.continueAsNew(input, next) : next(input);
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>): Promise<void> {
    return inTrace() ? this.otel.signalWorkflow(input, next) : next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new TracedInbound()],
  outbound: [new TracedOutbound()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
