// amqplib: a DLQ consumer that rejects and requeues every delivery, one
// message at a time (prefetch 1), as seed 004's DLQ consumer loop would.
const amqp = require('amqplib');
const secs = Number(process.env.SECS || 3);
(async () => {
  const conn = await amqp.connect(process.env.URL || 'amqp://guest:guest@127.0.0.1:5672/');
  const ch = await conn.createChannel();
  const q = await ch.assertQueue('', {exclusive: true, autoDelete: true});
  await ch.prefetch(1);
  ch.sendToQueue(q.queue, Buffer.from('{"bad":'));
  let n = 0, redelivered = 0, t0 = 0;
  await ch.consume(q.queue, m => {
    if (!t0) t0 = Date.now();
    n++; if (m.fields.redelivered) redelivered++;
    ch.nack(m, false, true); // reject and requeue
  });
  await new Promise(r => setTimeout(r, secs * 1000));
  const el = (Date.now() - t0) / 1000;
  console.log(JSON.stringify({deliveries: n, redelivered, seconds: el, perSecond: Math.round(n / el)}));
  await conn.close();
})().catch(e => { console.error(e.message); process.exit(1); });
