/**
 * `node dist-tools/devstack/say.js --nats URL --channel ID --author ID TEXT` (npm run demo-say):
 * publishes one MESSAGE_CREATE event as the host chat server would (docs/design.md, Message events), to wake
 * the phones of the dev stack's demo or of `simulate-device`. The text goes nowhere: the
 * event carries ids only, and the push service never sees message content.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { nats: { type: 'string', default: 'nats://127.0.0.1:54222' }, channel: { type: 'string' }, author: { type: 'string' } },
  });
  const snowflake = /^[1-9]\d{0,18}$/;
  if (!snowflake.test(values.channel ?? '') || !snowflake.test(values.author ?? ''))
    throw new Error('usage: say --nats URL --channel ID --author ID [TEXT]');
  const id = (BigInt(Date.now()) * 1_000_000n + BigInt(randomInt(0, 999_999))).toString();
  const event = { id, channel_id: values.channel, author_id: values.author, created_at: new Date().toISOString() };
  const nc = await connect({ servers: values.nats });
  try {
    await jetstream(nc).publish(`channel.${values.channel}.MESSAGE_CREATE`, JSON.stringify(event), { msgID: `message-${id}` });
  } finally {
    await nc.drain();
  }
  const text = positionals.join(' ');
  process.stdout.write(
    `published message ${id} in channel ${values.channel}${text === '' ? '' : ` (its text "${text}" stays with you: events carry ids only)`}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`say: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
