import { createContext, type ReactNode, useCallback, useContext, useEffect, useState } from 'react';
import { api } from './api/client';

/** How often the nav badge reads the review queue total, ms (polled). */
export const BADGE_POLL_MS = 10_000;

interface QueueTotal {
  /** Pending drafts of the organization; null until the first read. */
  total: number | null;
  /** Reads the total now (after an approve or a reject). */
  refresh: () => void;
}

const QueueTotalContext = createContext<QueueTotal>({ total: null, refresh: () => undefined });

/** Holds the review queue total for the nav badge, read every BADGE_POLL_MS and on demand. */
export function QueueTotalProvider({ children }: { children: ReactNode }) {
  const [total, setTotal] = useState<number | null>(null);
  const refresh = useCallback(() => {
    void api.GET('/agentic/outreach/actions', { params: { query: { limit: 1 } } }).then(({ data }) => {
      if (data) setTotal(data.total);
    });
  }, []);
  useEffect(() => {
    refresh();
    const timer = window.setInterval(refresh, BADGE_POLL_MS);
    return () => window.clearInterval(timer);
  }, [refresh]);
  return <QueueTotalContext.Provider value={{ total, refresh }}>{children}</QueueTotalContext.Provider>;
}

export function useQueueTotal(): QueueTotal {
  return useContext(QueueTotalContext);
}
