/** Every workflow the worker runs. Deterministic code only: see eslint.config.js. */
export { registrationWorkflow } from './registration.js';
export { maintenanceWorkflow } from './maintenance.js';
