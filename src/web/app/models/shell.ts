// What the header says about the live connection. Pure: state and clock in, words out. Text,
// not colour alone, says whether the page is live.
import type { LiveState } from '../live';

export interface LiveLabel {
  text: string;
  tone: 'ok' | 'warn' | 'idle';
}

export function liveLabel(s: LiveState, now: number): LiveLabel {
  switch (s.kind) {
    case 'live':
      return { text: 'Live', tone: 'ok' };
    case 'connecting':
      return { text: 'Connecting…', tone: 'idle' };
    case 'stopped':
      return { text: 'Not connected', tone: 'idle' };
    case 'reconnecting': {
      const secs = Math.max(0, Math.ceil((s.retryAt - now) / 1000));
      return { text: `Connection lost: reconnecting${secs ? ` in ${secs}s` : '…'} (refreshing every few seconds meanwhile)`, tone: 'warn' };
    }
  }
}
