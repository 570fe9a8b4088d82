/**
 * Where the CPU went during a timed window, read from Linux's /proc: this process, the server's
 * process, PostgreSQL's processes, and the whole machine. On a shared machine the last tells
 * how much of what was timed was someone else's load.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/** CPU milliseconds used so far, by whom. */
export interface CPUSnapshot {
  client: number;
  server: number;
  postgres: number;
  /** Every core's busy time, anyone's. */
  machineBusy: number;
}

/**
 * The CPU used so far by this process, `serverPid`, PostgreSQL and the machine. Reading /proc
 * takes this process a few ms: at the `start` of a window the cheap counters are read last, at
 * its `end` first, so the reading is not billed to the window.
 */
export function cpuSnapshot(serverPid: number, at: 'start' | 'end'): CPUSnapshot {
  let cheap = at === 'end' ? cheapCounters() : undefined;
  let postgres = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') postgres += processMs(pid);
    } catch {
      // Gone since the directory was read.
    }
  }
  const server = processMs(String(serverPid));
  cheap ??= cheapCounters();
  return { ...cheap, server, postgres };
}

/** `after - before`, field by field. */
export function cpuSpent(before: CPUSnapshot, after: CPUSnapshot): CPUSnapshot {
  return {
    client: after.client - before.client,
    server: after.server - before.server,
    postgres: after.postgres - before.postgres,
    machineBusy: after.machineBusy - before.machineBusy,
  };
}

/** One line on the machine, to read the figures by: cores, model, load averages, open-file limit. */
export function machineLine(): string {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  return `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model.trim()}), load average ${load} (1 / 5 / 15 min), open files ${openFilesLimit().soft}`;
}

/** This process's limit on open files (each socket is one). */
export function openFilesLimit(): { soft: number; hard: number } {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = line!
    .split(/\s{2,}/)
    .slice(1, 3)
    .map((v) => (v === 'unlimited' ? Infinity : Number(v)));
  return { soft: soft!, hard: hard! };
}

function cheapCounters(): { client: number; machineBusy: number } {
  const { user, system } = process.cpuUsage();
  // The first line of /proc/stat: user nice system idle iowait irq softirq steal ...; idle and iowait are not busy.
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const busy = ticks.reduce((a, b) => a + b, 0) - ticks[3]! - ticks[4]!;
  return { client: (user + system) / 1000, machineBusy: busy * TICK_MS };
}

/** utime + stime of a process, in ms (fields 14 and 15 of its stat, after the parenthesised name). */
function processMs(pid: string): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
