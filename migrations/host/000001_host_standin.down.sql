DROP TABLE IF EXISTS device_tokens, device_keys, refresh_tokens, notification_settings,
  permission_overwrites, channel_members, channels, member_roles, roles, server_members,
  servers, users;
