/**
 * Child-process entry (isolation 'process', the default): answers jobs one at a time over the IPC
 * channel, and exits when the parent goes away so no parser outlives the server.
 */
import { preloadLibraries } from './extract';
import { answer, type JobMessage, type RunnerMessage, type WarmMessage } from './job';

const send = (msg: RunnerMessage) => process.send!(msg);
// answer() does not reject (a failure is its reply); a reply that cannot be sent means the parent is
// gone: the child ends, as it does on 'disconnect'.
process.on('message', (msg: JobMessage | WarmMessage) => {
  if ('warm' in msg) { void preloadLibraries(); return; }
  answer(msg).then(send).catch(() => process.exit(1));
});
process.on('disconnect', () => process.exit(0));
send({ ready: true });
