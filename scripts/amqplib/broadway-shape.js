// A Broadway-shaped DLQ consumer on amqplib: prefetch 50 (broadway_rabbitmq's
// default), a processor that rejects+requeues a body that is not JSON at once,
// and a batcher that flushes after 1 s (a batch of 1000 never fills) and,
// the DB being away, rejects+requeues every message of the batch.
const amqp = require('amqplib');
const secs = Number(process.env.SECS || 5);
(async () => {
  const conn = await amqp.connect(process.env.URL || 'amqp://guest:guest@127.0.0.1:5672/');
  const ch = await conn.createChannel();
  const q = await ch.assertQueue('', {exclusive: true, autoDelete: true});
  await ch.prefetch(50);
  ch.sendToQueue(q.queue, Buffer.from(JSON.stringify({name: 'User', email: 'u@email.com'})), {messageId: 'user'});
  ch.sendToQueue(q.queue, Buffer.from('{"bad":'), {messageId: 'bad'});
  const n = {user: 0, bad: 0};
  let batch = [], timer = null;
  const flush = () => { timer = null; for (const m of batch) ch.nack(m, false, true); batch = []; };
  const t0 = Date.now();
  await ch.consume(q.queue, m => {
    n[m.properties.messageId]++;
    try { JSON.parse(m.content.toString()); } catch (e) { ch.nack(m, false, true); return; }
    batch.push(m);
    if (!timer) timer = setTimeout(flush, 1000);
  });
  await new Promise(r => setTimeout(r, secs * 1000));
  const el = (Date.now() - t0) / 1000;
  console.log(JSON.stringify({seconds: el, user: n.user, bad: n.bad,
    userPerSecond: +(n.user / el).toFixed(1), badPerSecond: Math.round(n.bad / el)}));
  if (timer) clearTimeout(timer);
  await conn.close();
})().catch(e => { console.error(e.message); process.exit(1); });
