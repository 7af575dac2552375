// amqp-connection-manager 5.0.0 on amqplib 2.3.1 (seed 003's stack): the
// connection drops while confirmed publishes are in flight. Which publish
// promises reject, and how many of those messages reached the queue? And
// what of a publish made once the library knows the connection is gone?
// The queue is named for this process and expires 60 s after its last
// use (x-expires), so a killed run leaves nothing behind for long.
const acm = require('amqp-connection-manager');
const url = process.env.URL || 'amqp://guest:guest@127.0.0.1:5672/';
const n = Number(process.env.N || 2000);
const afterMs = Number(process.env.DROP_MS || 5); // when the socket dies
const q = 'qlab-acm-drop-' + process.pid;
// reconnectTimeInSeconds 1, not the seed's 60, only to end the run sooner.
const conn = acm.connect([url], {heartbeatIntervalInSeconds: 60, reconnectTimeInSeconds: 1});
const ch = conn.createChannel({confirm: true,
  setup: c => c.assertQueue(q, {durable: false, arguments: {'x-expires': 60000}})});
ch.on('error', () => {});
(async () => {
  await ch.waitForConnect();
  let resolved = 0, rejected = 0;
  const errors = {};
  const all = [];
  for (let i = 0; i < n; i++) {
    all.push(ch.publish('', q, Buffer.from('m' + i)).then(() => resolved++, e => {
      rejected++; errors[e.message] = (errors[e.message] || 0) + 1;
    }));
  }
  // Publishes made after the disconnect: the wrapper has no channel and
  // keeps them in memory until it reconnects.
  let later = 0;
  const held = new Promise(done => conn.once('disconnect', () => {
    const ps = [];
    for (let i = 0; i < 10; i++) ps.push(ch.publish('', q, Buffer.from('late' + i)).then(() => later++));
    Promise.all(ps).then(done, done);
  }));
  const reset = Object.assign(new Error('read ECONNRESET'), {code: 'ECONNRESET'});
  setTimeout(() => conn.connection.connection.stream.destroy(reset), afterMs);
  await Promise.race([Promise.all(all), new Promise(r => setTimeout(r, 15000))]);
  await held; // resolves only after the reconnect
  const probe = await conn.connection.createChannel();
  const {messageCount} = await probe.checkQueue(q);
  await probe.deleteQueue(q);
  console.log(JSON.stringify({published: n, resolved, rejected, pending: n - resolved - rejected,
    errors, afterDisconnect: {published: 10, resolved: later}, inQueue: messageCount}));
  await conn.close();
})().catch(e => { console.error(e.message); process.exit(1); });
