/**
 * The Temporal names (docs/design.md, Temporal), in one place. Pure (only `@temporalio/common`), so the
 * workflow bundle, the worker, the api and the bridge all import the same definitions.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Workflow id of a device's registration workflow. `device_id` may contain ':'; the user id cannot. */
export function registrationWorkflowId(userId: string, deviceId: string): string {
  return `push-device:${userId}:${deviceId}`;
}

/** The device of a `registrationWorkflowId`, or undefined for any other id. */
export function parseRegistrationWorkflowId(workflowId: string): { readonly userId: string; readonly deviceId: string } | undefined {
  const match = /^push-device:(\d{1,19}):(.+)$/s.exec(workflowId);
  return match === null ? undefined : { userId: match[1]!, deviceId: match[2]! };
}

export const registrationWorkflowType = 'registrationWorkflow';
export const maintenanceWorkflowType = 'maintenanceWorkflow';
export const maintenanceScheduleId = 'push-maintenance';

export const PushUserId = defineSearchAttributeKey('PushUserId', SearchAttributeType.KEYWORD);
export const PushDeviceId = defineSearchAttributeKey('PushDeviceId', SearchAttributeType.KEYWORD);
export const PushTransport = defineSearchAttributeKey('PushTransport', SearchAttributeType.KEYWORD);

/** Custom search attributes the namespace must have: name → type as the CLI spells it. */
export const customSearchAttributes: Readonly<Record<string, 'Keyword'>> = {
  PushUserId: 'Keyword',
  PushDeviceId: 'Keyword',
  PushTransport: 'Keyword',
};
