import type { ApiError } from './api/client';

/** A failed call as every page shows it: the gateway's error code, then its message. */
export function ErrorMessage({ error, testId }: { error: ApiError; testId?: string }) {
  return (
    <p role="alert" className="error" data-testid={testId}>
      <code>{error.code}</code> {error.message}
    </p>
  );
}

/**
 * The state of a page's read before its content: the error when the read failed, else "Loading…"
 * while `loading`, else nothing. One block for every page, so they all fail and wait alike.
 */
export function LoadState({ loading, error }: { loading: boolean; error: ApiError | null }) {
  if (error) return <ErrorMessage error={error} />;
  return loading ? <p>Loading…</p> : null;
}
