// amqplib: publish with timestamp: Date.now() (the seed's way), read back.
const amqp = require('amqplib');
(async () => {
  const conn = await amqp.connect(process.env.URL || 'amqp://guest:guest@127.0.0.1:5672/');
  const ch = await conn.createChannel();
  const q = await ch.assertQueue('', {exclusive: true, autoDelete: true});
  const sent = Date.now();
  ch.sendToQueue(q.queue, Buffer.from('probe'), {timestamp: sent});
  let m = null;
  for (let i = 0; i < 100 && !m; i++) { m = await ch.get(q.queue, {noAck: true}); if (!m) await new Promise(r => setTimeout(r, 20)); }
  const ts = m.properties.timestamp;
  console.log(JSON.stringify({sent, readBack: ts, asMsDate: new Date(ts).toISOString(),
    asSecondsYear: new Date(ts * 1000).getUTCFullYear()}));
  await conn.close();
})().catch(e => { console.error(e.message); process.exit(1); });
