import type { ComponentType } from 'react';
import type { Session } from './api/session';
import { AmbiguousSendsPage } from './pages/ambiguous-sends';
import { CampaignPage } from './pages/campaign';
import { CampaignsPage } from './pages/campaigns';
import { DoNotContactPage } from './pages/do-not-contact';
import { FlowPage } from './pages/flow';
import { FlowsPage } from './pages/flows';
import { FollowupApprovalsPage } from './pages/followup-approvals';
import { FollowupEnrollmentPage } from './pages/followup-enrollment';
import { FollowupsQueuePage } from './pages/followups-queue';
import { NotFoundPage } from './pages/not-found';
import { ReviewPage } from './pages/review';
import { ServicesPage } from './pages/services';
import { type Location, match } from './router';

/** What every page gets: the path's params, the location (its query) and the session. */
export interface PageProps {
  params: Record<string, string>;
  location: Location;
  session: Session;
}

interface Route {
  path: string;
  page: ComponentType<PageProps>;
  /** The nav entry that is current on this page. */
  section: string;
}

/**
 * Every page of the console, one file each under pages/. To add one: write the page, add its route
 * here, and its nav entry below when it has one.
 */
export const ROUTES: Route[] = [
  { path: '/review', page: ReviewPage, section: '/review' },
  { path: '/campaigns', page: CampaignsPage, section: '/campaigns' },
  { path: '/campaigns/:campaign_id', page: CampaignPage, section: '/campaigns' },
  { path: '/followups/queue', page: FollowupsQueuePage, section: '/followups/queue' },
  { path: '/followups/flows', page: FlowsPage, section: '/followups/flows' },
  { path: '/followups/flows/:flow_id', page: FlowPage, section: '/followups/flows' },
  { path: '/followups/enrollments/:enrollment_id', page: FollowupEnrollmentPage, section: '/followups/queue' },
  { path: '/followups/approvals', page: FollowupApprovalsPage, section: '/followups/approvals' },
  { path: '/operations/ambiguous', page: AmbiguousSendsPage, section: '/operations/ambiguous' },
  { path: '/operations/do-not-contact', page: DoNotContactPage, section: '/operations/do-not-contact' },
  { path: '/operations/services', page: ServicesPage, section: '/operations/services' },
];

/** The nav, in groups. */
export const NAV: Array<{ title: string; items: Array<{ to: string; label: string }> }> = [
  {
    title: 'Outreach',
    items: [
      { to: '/review', label: 'Review' },
      { to: '/campaigns', label: 'Campaigns' },
    ],
  },
  {
    title: 'Follow-ups',
    items: [
      { to: '/followups/queue', label: 'Queue' },
      { to: '/followups/flows', label: 'Flows' },
      { to: '/followups/approvals', label: 'Awaiting decision' },
    ],
  },
  {
    title: 'Operations',
    items: [
      { to: '/operations/ambiguous', label: 'Ambiguous sends' },
      { to: '/operations/do-not-contact', label: 'Do not contact' },
      { to: '/operations/services', label: 'Services' },
    ],
  },
];

/** The page of `path`, with its params. */
export function resolve(path: string): { page: ComponentType<PageProps>; params: Record<string, string>; section: string | null } {
  for (const route of ROUTES) {
    const params = match(route.path, path);
    if (params) return { page: route.page, params, section: route.section };
  }
  return { page: NotFoundPage, params: {}, section: null };
}
