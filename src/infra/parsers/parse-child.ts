/**
 * Child-process entry (isolation 'process', the default): answers jobs one at a time over the IPC
 * channel, and exits when the parent goes away so no parser outlives the server.
 */
import { answer, type JobMessage, type RunnerMessage } from './job';

const send = (msg: RunnerMessage) => process.send!(msg);
process.on('message', async (msg: JobMessage) => send(await answer(msg)));
process.on('disconnect', () => process.exit(0));
send({ ready: true });
