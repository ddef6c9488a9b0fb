/** The permission bits this service needs (docs/design.md, Recipients; Discord's numbering). */
export const ADMINISTRATOR = 1n << 3n;
export const VIEW_CHANNEL = 1n << 10n;

/** Every bit set: what the owner and an administrator hold. */
export const ALL_PERMISSIONS = -1n;
