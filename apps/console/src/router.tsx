import { type AnchorHTMLAttributes, type MouseEvent, type ReactNode, useEffect, useState } from 'react';

/**
 * A small router over the History API: the console has a dozen pages and no nested layouts, so a
 * route table (routes.tsx) and these three helpers are all it needs. Paths are relative to Vite's
 * base (`/console/`); the gateway answers every path under it with index.html.
 */
const BASE = import.meta.env.BASE_URL.replace(/\/$/, '');

/** The current location: the path under /console (always starting with `/`) and its query. */
export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) || '/' : '/';
  return { path, query: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((listener) => listener()));

/** Goes to `to` (a path under /console, optionally with a query); `replace` keeps the history entry. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${to.startsWith('/') ? to : `/${to}`}`;
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((listener) => listener());
}

/** The current location; re-renders on every navigation. */
export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = () => setLocation(current());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return location;
}

/** `to` with the query parameter `name` set to `value`, or removed when `value` is null. */
export function withQuery(location: Location, name: string, value: string | null): string {
  const query = new URLSearchParams(location.query);
  if (value === null) query.delete(name);
  else query.set(name, value);
  const search = query.toString();
  return `${location.path}${search ? `?${search}` : ''}`;
}

/** The params of `pattern` (`/campaigns/:id`) in `path`, or null when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.replace(/\/$/, '').split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (const [i, part] of want.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(got[i]!);
    else if (part !== got[i]) return null;
  }
  return params;
}

/** An in-app link: a real `<a href>` (open in a new tab works), navigating without a reload on a plain click. */
export function Link({ to, children, ...rest }: { to: string; children: ReactNode } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    rest.onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a {...rest} href={`${BASE}${to}`} onClick={onClick}>
      {children}
    </a>
  );
}
