import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  type FlowCreateData,
  type FlowCreateFromModelData,
  type FlowGraph,
  type FlowModelView,
  type FlowPublishData,
  type FlowRef,
  type FlowRollbackData,
  type FlowSetStatusData,
  type FlowSettings,
  type FlowUpdateData,
  type FlowVersionView,
  type FlowView,
  FollowupsEvents,
} from '@touchpoint/contracts';
import { notFound, poolOf, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG, UnitOfWork } from '@touchpoint/runtime';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import type { FollowupsConfig } from '../followups.config.js';
import { validateForPublish } from '../graph/graph-validation.js';
import { check, revisionConflict } from '../input-checks/input-checks.js';
import { SettingsService } from '../settings/settings.service.js';
import { StopPathsService } from '../stop-paths/stop-paths.service.js';
import { findFlowModel, listFlowModels } from './flow-models.js';
import { flowSettingsProblems } from './flow-settings.js';
import { FlowsRepository } from './flows.repository.js';

/** Draft limits: a draft may be unfinished, but not unbounded (publish applies the real limits). */
const DRAFT_MAX_NODES = 200;
const DRAFT_MAX_EDGES = 400;

/**
 * Flows: drafts, publication into immutable versions, rollback, and status (seed 002 "Fluxos").
 * Saving a draft never touches the published version; enrollments pin the version they started on.
 */
@Injectable()
export class FlowsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly flows: FlowsRepository,
    private readonly settings: SettingsService,
    private readonly stopPaths: StopPathsService,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
  ) {}

  list(organizationId: string): Promise<FlowView[]> {
    return this.flows.list(poolOf(this.uow.dataSource), organizationId);
  }

  /** @throws AppError not_found */
  async get(input: FlowRef): Promise<FlowView> {
    check(input).uuid('organization_id').uuid('flow_id').done();
    return (await this.flows.find(poolOf(this.uow.dataSource), input.organization_id, input.flow_id)) ?? throwNotFound();
  }

  /**
   * Creates a draft (status `draft`, revision 1).
   * @throws AppError validation_failed (graph or settings malformed)
   */
  async create(input: FlowCreateData): Promise<FlowView> {
    checkDraft(input);
    return this.uow.run((tx) => this.flows.insert(tx, { id: randomUUID(), organizationId: input.organization_id, name: input.name.trim(), graph: input.graph, settings: input.settings, now: this.clock.now() }));
  }

  models(): FlowModelView[] {
    return listFlowModels();
  }

  /**
   * Creates a draft from a ready-made model.
   * @throws AppError not_found (unknown model), stage_required (the model needs `stage_id`)
   */
  async createFromModel(input: FlowCreateFromModelData): Promise<FlowView> {
    check(input).uuid('organization_id').string('model_id', 1, 64).string('name', 1, 200, true).string('stage_id', 1, 200, true).done();
    const model = findFlowModel(input.model_id);
    if (!model) throw new AppError(ErrorCode.NotFound, `no flow model "${input.model_id}"`);
    if (model.requires_stage && !input.stage_id) throw new AppError(ErrorCode.StageRequired, `the model "${model.id}" needs a stage_id: the deal stage that starts it`);
    const { graph, settings } = model.build({ stageId: input.stage_id });
    return this.uow.run((tx) =>
      this.flows.insert(tx, {
        id: randomUUID(),
        organizationId: input.organization_id,
        name: input.name?.trim() || model.name,
        graph,
        settings,
        modelId: model.id,
        stageId: input.stage_id ?? null,
        now: this.clock.now(),
      }),
    );
  }

  /**
   * Saves the draft (seed 002 PUT): the published version does not change.
   * @throws AppError validation_failed, not_found, revision_conflict
   */
  async update(input: FlowUpdateData): Promise<FlowView> {
    checkDraft(input);
    check(input)
      .uuid('flow_id')
      .int('expected_revision', 1, 2 ** 31 - 1)
      .done();
    return this.uow.run((tx) => this.casOrExplain(tx, input, { name: input.name.trim(), graph: input.graph, settings: input.settings }));
  }

  /**
   * Sets the status (seed 002 PATCH). Active needs a published version; archiving cancels the
   * flow's live enrollments; re-activating a paused flow resumes the enrollments it parked.
   * @throws AppError publish_required, not_found, revision_conflict, validation_failed
   */
  async setStatus(input: FlowSetStatusData): Promise<FlowView> {
    check(input)
      .uuid('organization_id')
      .uuid('flow_id')
      .int('expected_revision', 1, 2 ** 31 - 1)
      .oneOf('status', ['active', 'paused', 'archived'])
      .done();
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const current = await this.flows.find(tx, input.organization_id, input.flow_id, true);
      if (!current) throw notFound('flow');
      if (current.revision !== input.expected_revision) throw revisionConflict('flow', input.expected_revision, current.revision);
      if (input.status === 'active' && !current.published_version_id) {
        throw new AppError(ErrorCode.PublishRequired, 'publish the flow before activating it');
      }
      const flow = await this.casOrExplain(tx, input, { status: input.status });
      if (input.status === 'archived') await this.stopPaths.stopFlow(tx, input.organization_id, input.flow_id, now);
      if (input.status === 'active') await this.stopPaths.resumeParkedByFlow(tx, input.organization_id, input.flow_id, now);
      await tx.publish({
        event_id: `followups.flow.status_changed:${flow.id}:${flow.revision}`,
        type: FollowupsEvents.FlowStatusChanged,
        organization_id: input.organization_id,
        data: { flow_id: flow.id, status: flow.status },
      });
      return flow;
    });
  }

  /**
   * Publishes the draft as a new immutable version (seed 002 "publish").
   * @throws AppError invalid_graph with `details.validation_errors`, not_found, revision_conflict
   */
  async publish(input: FlowPublishData): Promise<FlowView> {
    check(input)
      .uuid('organization_id')
      .uuid('flow_id')
      .int('expected_revision', 1, 2 ** 31 - 1)
      .done();
    return this.uow.run(async (tx) => {
      const flow = await this.lockAtRevision(tx, input);
      await this.assertPublishable(input.organization_id, flow.graph, flow.settings);
      return this.publishVersion(tx, flow, input.expected_revision, flow.graph, flow.settings, null);
    });
  }

  /** Versions, newest first (seed 002). @throws AppError not_found */
  async versions(input: FlowRef): Promise<FlowVersionView[]> {
    await this.get(input);
    return this.flows.versions(poolOf(this.uow.dataSource), input.organization_id, input.flow_id);
  }

  /**
   * Republishes an older version as the newest one, with the same checks as publish; the draft
   * becomes that version's graph and settings, so a later publish does not undo the rollback.
   * @throws AppError invalid_graph, not_found (flow or version), revision_conflict
   */
  async rollback(input: FlowRollbackData): Promise<FlowView> {
    check(input)
      .uuid('organization_id')
      .uuid('flow_id')
      .uuid('version_id')
      .int('expected_revision', 1, 2 ** 31 - 1)
      .done();
    return this.uow.run(async (tx) => {
      const flow = await this.lockAtRevision(tx, input);
      const version = await this.flows.findVersion(tx, input.organization_id, input.version_id);
      if (!version || version.flow_id !== flow.id) throw notFound('version');
      await this.assertPublishable(input.organization_id, version.graph, version.settings);
      return this.publishVersion(tx, flow, input.expected_revision, version.graph, version.settings, version.id);
    });
  }

  private async lockAtRevision(tx: Tx, input: FlowRef & { expected_revision: number }): Promise<FlowView> {
    const flow = await this.flows.find(tx, input.organization_id, input.flow_id, true);
    if (!flow) throw notFound('flow');
    if (flow.revision !== input.expected_revision) throw revisionConflict('flow', input.expected_revision, flow.revision);
    return flow;
  }

  private async publishVersion(tx: Tx, flow: FlowView, expectedRevision: number, graph: FlowGraph, settings: FlowSettings, sourceVersionId: string | null): Promise<FlowView> {
    const now = this.clock.now();
    const version = await this.flows.insertVersion(tx, { id: randomUUID(), organizationId: flow.customer_id, flowId: flow.id, graph, settings, sourceVersionId, now });
    const updated = await this.flows.updateIfRevision(tx, flow.customer_id, flow.id, expectedRevision, { published_version_id: version.id, graph, settings }, now);
    if (!updated) throw revisionConflict('flow', expectedRevision, flow.revision);
    await tx.publish({
      event_id: `followups.flow.published:${version.id}`,
      type: FollowupsEvents.FlowPublished,
      organization_id: flow.customer_id,
      data: { flow_id: flow.id, version_id: version.id, version: version.version, source_version_id: sourceVersionId },
    });
    return updated;
  }

  /** @throws AppError invalid_graph with `details.validation_errors` */
  private async assertPublishable(organizationId: string, graph: FlowGraph, settings: FlowSettings): Promise<void> {
    const organization = await this.settings.get(organizationId);
    const errors = validateForPublish(graph, settings, { approvedTemplates: organization.approved_templates, aiStepsAvailable: this.config.FOLLOWUP_AI_STEPS_ENABLED });
    if (errors.length) {
      throw new AppError(ErrorCode.InvalidGraph, `the flow cannot be published: ${errors.length} problem(s), first: ${errors[0].message}`, { validation_errors: errors });
    }
  }

  /** Revision-guarded update; tells not_found from revision_conflict when it misses. */
  private async casOrExplain(tx: Tx, input: FlowRef & { expected_revision: number }, set: Record<string, unknown>): Promise<FlowView> {
    const updated = await this.flows.updateIfRevision(tx, input.organization_id, input.flow_id, input.expected_revision, set, this.clock.now());
    if (updated) return updated;
    const current = await this.flows.find(tx, input.organization_id, input.flow_id);
    if (!current) throw notFound('flow');
    throw revisionConflict('flow', input.expected_revision, current.revision);
  }
}

function throwNotFound(): never {
  throw notFound('flow');
}

/** @throws AppError validation_failed when the draft's name, graph or settings are malformed */
function checkDraft(input: { organization_id: string; name: string; graph: FlowGraph; settings: FlowSettings }): void {
  check(input).uuid('organization_id').string('name', 1, 200).custom('graph', graphShapeProblems(input.graph)).custom('settings', flowSettingsProblems(input.settings)).done();
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(v);

/**
 * The shape a draft graph must have to be stored (its rules are checked at publish): node ids,
 * types, labels, positions and config objects; edge ids, ends and condition objects.
 */
export function graphShapeProblems(graph: unknown): string[] {
  if (!isObject(graph) || !Array.isArray(graph.nodes) || !Array.isArray(graph.edges)) return ['graph must be {nodes: [...], edges: [...]}'];
  const problems: string[] = [];
  if (graph.nodes.length > DRAFT_MAX_NODES) problems.push(`graph.nodes: at most ${DRAFT_MAX_NODES} in a draft`);
  if (graph.edges.length > DRAFT_MAX_EDGES) problems.push(`graph.edges: at most ${DRAFT_MAX_EDGES} in a draft`);
  graph.nodes.forEach((n, i) => {
    if (!isObject(n)) return problems.push(`graph.nodes.${i}: must be an object`);
    if (!isId(n.id)) problems.push(`graph.nodes.${i}.id: 1-64 letters, digits, _ or -`);
    if (typeof n.type !== 'string' || n.type.length === 0 || n.type.length > 40) problems.push(`graph.nodes.${i}.type: a node type`);
    if (n.label !== undefined && (typeof n.label !== 'string' || codePointLength(n.label) > 200)) problems.push(`graph.nodes.${i}.label: up to 200 characters`);
    if (n.position !== undefined && (!isObject(n.position) || typeof n.position.x !== 'number' || typeof n.position.y !== 'number')) problems.push(`graph.nodes.${i}.position: {x, y} numbers`);
    if (!isObject(n.config)) problems.push(`graph.nodes.${i}.config: must be an object`);
    for (const key of Object.keys(n)) if (!['id', 'type', 'label', 'position', 'config'].includes(key)) problems.push(`graph.nodes.${i}.${key}: unknown field`);
  });
  graph.edges.forEach((e, i) => {
    if (!isObject(e)) return problems.push(`graph.edges.${i}: must be an object`);
    if (!isId(e.id)) problems.push(`graph.edges.${i}.id: 1-64 letters, digits, _ or -`);
    if (!isId(e.source)) problems.push(`graph.edges.${i}.source: a node id`);
    if (!isId(e.target)) problems.push(`graph.edges.${i}.target: a node id`);
    if (!isObject(e.condition) || typeof e.condition.type !== 'string') problems.push(`graph.edges.${i}.condition: {type, ...}`);
    for (const key of Object.keys(e)) if (!['id', 'source', 'target', 'condition'].includes(key)) problems.push(`graph.edges.${i}.${key}: unknown field`);
  });
  if (JSON.stringify(graph).length > 512 * 1024) problems.push('graph: larger than 512 KiB');
  return problems;
}
