/** How long the test harness takes to start and stop one throwaway PostgreSQL cluster. */
import { startCluster } from 'hotload-test-support';

const runs = 5;
const startMs: number[] = [];
const stopMs: number[] = [];
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const cluster = await startCluster();
  const t1 = performance.now();
  await cluster.stop();
  startMs.push(t1 - t0);
  stopMs.push(performance.now() - t1);
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(
  JSON.stringify({
    bench: 'cluster-start',
    runs,
    start_p50_ms: Math.round(median(startMs)),
    start_max_ms: Math.round(Math.max(...startMs)),
    stop_p50_ms: Math.round(median(stopMs)),
  }),
);
