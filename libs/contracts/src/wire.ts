/**
 * The wire contracts, once (DESIGN §2): every event and command name → the type of its `data`
 * (`BusContract`), and every RPC pattern → its request and answer (`RpcContract`). `tx.publish`,
 * `@OnBusMessage`, `RpcClient.call`, the gateway's `ServiceForwarder` and `@OnRpc` handlers all read
 * their types from here, so a message or a call whose payload does not match its name does not
 * compile. Types only: what travels on the wire is unchanged.
 */
import { type AbuseActionEventData, type AbuseActionView, type AbuseCheckBatchAnswer, type AbuseCheckBatchData, type AbuseCheckData, AbuseEvents, AbuseRpc, type AbuseVerdict, type RateLimitConfigView } from './abuse.js';
import { type AgentCreateData, type AgentDetailView, type AgentRef, AgentsRpc, type AgentVersionCreateData, type AgentView, type TurnPromiseListData, type TurnPromisesRecordData, type TurnPromiseView } from './agents.js';
import { type AiBudgetLimit, type AiBudgetLimitInput, type AiBudgetQuery, type AiBudgetView, AiRpc, type AiRunRequest, type AiRunResult } from './ai.js';
import {
  type ApprovalCheckData,
  type ApprovalCheckView,
  type BulkJobCreateData,
  type BulkJobRef,
  type BulkJobView,
  type CrmDealEventData,
  type CrmEventIngestData,
  type CrmEventIngestResult,
  CrmEvents,
  type CrmLeadEventData,
  type CursorPage,
  type DataEnvelope,
  type EffectDecisionData,
  type EffectDecisionView,
  type EffectListData,
  type EffectListItemView,
  type EffectResolveData,
  type EnrollmentControlData,
  type EnrollmentCreateData,
  type EnrollmentDetailView,
  type EnrollmentListData,
  type FlowCreateData,
  type FlowCreateFromModelData,
  type FlowModelView,
  type FlowPublishData,
  type FlowRef,
  type FlowRollbackData,
  type FlowSetStatusData,
  type FlowStatsView,
  type FlowUpdateData,
  type FlowVersionView,
  type FlowView,
  type FollowupEnrollmentRef,
  type FollowupEnrollmentView,
  type FollowupsEnrollmentCreatedData,
  type FollowupsEnrollmentFinishedData,
  type FollowupSettingsView,
  FollowupsEvents,
  type FollowupsFlowPublishedData,
  type FollowupsFlowStatusChangedData,
  type FollowupsHandoffRequestedData,
  FollowupsRpc,
  GatewayApprovalRpc,
  type PromiseCancelData,
  type PromiseCreateData,
  type PromiseDetailView,
  type PromiseListData,
  type PromiseRef,
  type PromiseResolveData,
  type PromiseView,
  type QueueItemView,
  type QueueListData,
  type RetentionReport,
  type SettingsEntitlementData,
  type SettingsUpdateData,
} from './followups.js';
import {
  type ContactCreateData,
  type ContactEventData,
  type ContactOptedOutData,
  type ContactTagEventData,
  type ContactUpdateData,
  type ContactView,
  type ConversationResolvedData,
  type ConversationStatus,
  type ConversationView,
  type HumanMessageSentData,
  type InstanceChangedData,
  type MessageOutcomeData,
  type MessageReceivedData,
  type MessageStatusChangedData,
  type MessageView,
  MessagingCommands,
  MessagingEvents,
  type MessagingInboundRecordData,
  type MessagingPage,
  MessagingRpc,
  type MessagingSendContent,
  type MessagingSendData,
  type MessagingSendResult,
  type MessagingStreamPage,
  type MessagingStreamReadData,
  type NotificationCreateData,
  type NotificationCreatedData,
  type NotificationDeliveryUpdatedData,
  type NotificationTemplateData,
  type NotificationTemplateView,
  type NotificationView,
  type SuppressionRequestedData,
  type InboundAcknowledgedData,
  type InboundDeniedData,
} from './messaging.js';
import {
  type LinkedinRelationAcceptedData,
  type LinkedinRelationEventData,
  MessagingWhatsAppRpc,
  type OutboxAccountCreateData,
  OutboxAccountRpc,
  type OutboxAmbiguousListData,
  type OutboxAmbiguousPage,
  type OutboxCancelData,
  type OutboxCancelResult,
  OutboxCommands,
  type OutboxEnqueueData,
  type OutboxEnqueueResult,
  type OutboxEntriesByKeyData,
  type OutboxEntryEventData,
  type OutboxEntryView,
  OutboxEvents,
  OutboxLinkedinEvents,
  OutboxLinkedinRpc,
  type OutboxProspectCapCheckData,
  type OutboxProspectCapCheckResult,
  type OutboxProspectCapData,
  type OutboxProspectCapView,
  type OutboxProviderStatusEventData,
  type OutboxResolveData,
  type OutboxResolveResult,
  OutboxRpc,
  type OutboxSenderCreateData,
  type OutboxSenderEventData,
  type OutboxSenderUpdateData,
  type OutboxSenderView,
  type OutboxSuppressionAddResult,
  type OutboxSuppressionData,
  type OutboxSuppressionListData,
  type OutboxSuppressionPage,
  type OutboxSuppressionRemoveResult,
  type WhatsAppInboundAccepted,
  type WhatsAppInboundBatch,
  type WhatsAppStatusBatch,
  type WhatsAppWebhookErrorBatch,
} from './outbox.js';
import {
  type ActionApproveData,
  type ActionApprovedData,
  type ActionRejectData,
  type ActionView,
  type CampaignCreateData,
  type CampaignRef,
  type CampaignView,
  type DecisionRequestedData,
  type EmailBounceData,
  type EmailHeadersQuery,
  type EmailHeadersView,
  type EmailSuppressionResult,
  type EmailUnsubscribeData,
  type EnrollBatchData,
  type EnrollBatchResult,
  type OutreachEnrollmentListQuery,
  type OutreachEnrollmentRef,
  type OutreachEnrollmentView,
  type EnrollOneData,
  type LinkedinStateQuery,
  type LinkedinStateView,
  OutreachDispatcherRpc,
  OutreachEvents,
  OutreachRpc,
  type OutreachSettingsView,
  OutreachSuppressionRpc,
  type ProviderAccountLookup,
  type ProviderAccountOwner,
  type ReviewQueuePage,
  type ReviewQueueQuery,
  type SuppressionCheckData,
  type SuppressionCheckResult,
  type TimelineItem,
} from './outreach.js';
import { PlatformEvents, type PlatformProbeData, PlatformRpc } from './platform.js';

/** Each bus message (event or command) by name → the type of its `data`. */
export interface BusContract {
  [AbuseEvents.ActionApplied]: AbuseActionEventData;
  [AbuseEvents.ActionExpired]: AbuseActionEventData;
  [CrmEvents.LeadCreated]: CrmLeadEventData;
  [CrmEvents.LeadStatusChanged]: CrmLeadEventData;
  [CrmEvents.DealStageChanged]: CrmDealEventData;
  [FollowupsEvents.FlowPublished]: FollowupsFlowPublishedData;
  [FollowupsEvents.FlowStatusChanged]: FollowupsFlowStatusChangedData;
  [FollowupsEvents.EnrollmentCreated]: FollowupsEnrollmentCreatedData;
  [FollowupsEvents.EnrollmentFinished]: FollowupsEnrollmentFinishedData;
  [FollowupsEvents.HandoffRequested]: FollowupsHandoffRequestedData;
  [MessagingCommands.Send]: MessagingSendData;
  [MessagingEvents.MessageReceived]: MessageReceivedData;
  [MessagingEvents.MessageSent]: MessageOutcomeData;
  [MessagingEvents.MessageFailed]: MessageOutcomeData;
  [MessagingEvents.MessageCancelled]: MessageOutcomeData;
  [MessagingEvents.MessageDelivered]: MessageOutcomeData;
  [MessagingEvents.MessageRead]: MessageOutcomeData;
  [MessagingEvents.MessageQueued]: MessageView;
  [MessagingEvents.MessageStatusChanged]: MessageStatusChangedData;
  [MessagingEvents.HumanMessageSent]: HumanMessageSentData;
  [MessagingEvents.ConversationResolved]: ConversationResolvedData;
  [MessagingEvents.InstanceOpened]: InstanceChangedData;
  [MessagingEvents.InstanceClosed]: InstanceChangedData;
  [MessagingEvents.InstanceSummarized]: InstanceChangedData;
  [MessagingEvents.ContactCreated]: ContactEventData;
  [MessagingEvents.ContactUpdated]: ContactEventData;
  [MessagingEvents.ContactTagged]: ContactTagEventData;
  [MessagingEvents.ContactUntagged]: ContactTagEventData;
  [MessagingEvents.ContactErased]: ContactEventData;
  [MessagingEvents.ContactOptedOut]: ContactOptedOutData;
  [MessagingEvents.SuppressionRequested]: SuppressionRequestedData;
  [MessagingEvents.InboundAcknowledged]: InboundAcknowledgedData;
  [MessagingEvents.InboundDenied]: InboundDeniedData;
  [MessagingEvents.NotificationCreated]: NotificationCreatedData;
  [MessagingEvents.NotificationDeliveryUpdated]: NotificationDeliveryUpdatedData;
  [OutboxCommands.Enqueue]: OutboxEnqueueData;
  [OutboxCommands.Cancel]: OutboxCancelData;
  [OutboxCommands.Suppress]: OutboxSuppressionData;
  [OutboxCommands.Unsuppress]: OutboxSuppressionData;
  [OutboxEvents.EntryAccepted]: OutboxEntryEventData;
  [OutboxEvents.EntryFailed]: OutboxEntryEventData;
  [OutboxEvents.EntryAmbiguous]: OutboxEntryEventData;
  [OutboxEvents.EntryCancelled]: OutboxEntryEventData;
  [OutboxEvents.EntryResolved]: OutboxEntryEventData;
  [OutboxEvents.ProviderStatusRecorded]: OutboxProviderStatusEventData;
  [OutboxEvents.SenderConnected]: OutboxSenderEventData;
  [OutboxEvents.SenderDisconnected]: OutboxSenderEventData;
  [OutboxEvents.SenderRemoved]: OutboxSenderEventData;
  [OutboxEvents.SenderUpdated]: OutboxSenderEventData;
  [OutboxLinkedinEvents.RelationAccepted]: LinkedinRelationEventData;
  [OutreachEvents.DecisionRequested]: DecisionRequestedData;
  [OutreachEvents.ActionApproved]: ActionApprovedData;
  [PlatformEvents.ProbeRecorded]: PlatformProbeData;
}

/** An event or command name of the platform. */
export type BusType = keyof BusContract;
/** The `data` of the message named `K`. */
export type BusPayload<K extends BusType> = BusContract[K];

/** Each RPC pattern → what the caller sends (`request`) and what the handler answers (`answer`). */
export interface RpcContract {
  [AbuseRpc.ListActions]: { request: { organization_id: string; contact_id?: string; active_only?: boolean }; answer: { items: AbuseActionView[] } };
  [AbuseRpc.Check]: { request: AbuseCheckData; answer: AbuseVerdict };
  [AbuseRpc.CheckBatch]: { request: AbuseCheckBatchData; answer: AbuseCheckBatchAnswer };
  [AbuseRpc.ListConfig]: { request: { organization_id?: string }; answer: { items: RateLimitConfigView[] } };
  [AbuseRpc.ActiveRestriction]: { request: { organization_id: string; contact_id: string }; answer: { restriction: AbuseActionView | null } };
  [AiRpc.BudgetGet]: { request: AiBudgetQuery; answer: AiBudgetView };
  [AiRpc.BudgetSetLimit]: { request: AiBudgetLimitInput; answer: AiBudgetLimit };
  [AiRpc.Run]: { request: AiRunRequest; answer: AiRunResult<Record<string, unknown>> };
  [AgentsRpc.AgentCreate]: { request: AgentCreateData; answer: DataEnvelope<AgentView> };
  [AgentsRpc.AgentGet]: { request: AgentRef; answer: DataEnvelope<AgentDetailView> };
  [AgentsRpc.AgentList]: { request: { organization_id: string }; answer: DataEnvelope<AgentView[]> };
  [AgentsRpc.AgentVersionCreate]: { request: AgentVersionCreateData; answer: DataEnvelope<AgentView> };
  [FollowupsRpc.BulkJobCreate]: { request: BulkJobCreateData; answer: DataEnvelope<BulkJobView> & { created: boolean } };
  [FollowupsRpc.BulkJobGet]: { request: BulkJobRef; answer: DataEnvelope<BulkJobView> };
  [FollowupsRpc.EffectDecide]: { request: EffectDecisionData; answer: DataEnvelope<EffectDecisionView> };
  [FollowupsRpc.EffectList]: { request: EffectListData; answer: DataEnvelope<CursorPage<EffectListItemView>> };
  [FollowupsRpc.EffectResolve]: { request: EffectResolveData; answer: DataEnvelope<{ resolved: true }> };
  [FollowupsRpc.EnrollmentControl]: { request: EnrollmentControlData; answer: DataEnvelope<FollowupEnrollmentView> };
  [FollowupsRpc.EnrollmentCreate]: { request: EnrollmentCreateData; answer: DataEnvelope<FollowupEnrollmentView> & { created: boolean } };
  [FollowupsRpc.EnrollmentGet]: { request: FollowupEnrollmentRef; answer: DataEnvelope<EnrollmentDetailView> };
  [FollowupsRpc.EnrollmentList]: { request: EnrollmentListData; answer: DataEnvelope<CursorPage<FollowupEnrollmentView>> };
  [FollowupsRpc.FlowCreate]: { request: FlowCreateData; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowCreateFromModel]: { request: FlowCreateFromModelData; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowGet]: { request: FlowRef; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowList]: { request: { organization_id: string }; answer: DataEnvelope<FlowView[]> };
  [FollowupsRpc.FlowModels]: { request: Record<string, never>; answer: DataEnvelope<FlowModelView[]> };
  [FollowupsRpc.FlowPublish]: { request: FlowPublishData; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowRollback]: { request: FlowRollbackData; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowSetStatus]: { request: FlowSetStatusData; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowStats]: { request: FlowRef; answer: DataEnvelope<FlowStatsView> };
  [FollowupsRpc.FlowUpdate]: { request: FlowUpdateData; answer: DataEnvelope<FlowView> };
  [FollowupsRpc.FlowVersions]: { request: FlowRef; answer: DataEnvelope<FlowVersionView[]> };
  [FollowupsRpc.PromiseCancel]: { request: PromiseCancelData; answer: DataEnvelope<PromiseView> };
  [FollowupsRpc.PromiseCreate]: { request: PromiseCreateData; answer: DataEnvelope<PromiseView> & { created: boolean } };
  [FollowupsRpc.PromiseGet]: { request: PromiseRef; answer: DataEnvelope<PromiseDetailView> };
  [FollowupsRpc.PromiseList]: { request: PromiseListData; answer: DataEnvelope<CursorPage<PromiseView>> };
  [FollowupsRpc.PromiseResolve]: { request: PromiseResolveData; answer: DataEnvelope<{ resolved: true }> };
  [FollowupsRpc.QueueList]: { request: QueueListData; answer: DataEnvelope<CursorPage<QueueItemView>> };
  [FollowupsRpc.RetentionRun]: { request: Record<string, never>; answer: DataEnvelope<RetentionReport> };
  [FollowupsRpc.SettingsGet]: { request: { organization_id: string }; answer: DataEnvelope<FollowupSettingsView> };
  [FollowupsRpc.SettingsSetEntitlement]: { request: SettingsEntitlementData; answer: DataEnvelope<FollowupSettingsView> };
  [FollowupsRpc.SettingsUpdate]: { request: SettingsUpdateData; answer: DataEnvelope<FollowupSettingsView> };
  [AgentsRpc.TurnPromiseList]: { request: TurnPromiseListData; answer: DataEnvelope<CursorPage<TurnPromiseView>> };
  [AgentsRpc.TurnPromisesRecord]: { request: TurnPromisesRecordData; answer: DataEnvelope<TurnPromiseView[]> & { created: boolean } };
  [GatewayApprovalRpc.Check]: { request: ApprovalCheckData; answer: ApprovalCheckView };
  [MessagingRpc.ContactCreate]: { request: ContactCreateData; answer: ContactView };
  [MessagingRpc.ContactErase]: { request: { organization_id: string; contact_id: string }; answer: ContactView };
  [MessagingRpc.ContactGet]: { request: { organization_id: string; contact_id: string }; answer: ContactView };
  [MessagingRpc.ContactList]: { request: { organization_id: string; cursor?: string; limit?: number; tag?: string; kind?: 'crm' | 'prospect' }; answer: MessagingPage<ContactView> };
  [MessagingRpc.ContactTag]: { request: { organization_id: string; contact_id: string; tags: string[]; source?: string }; answer: ContactView };
  [MessagingRpc.ContactUntag]: { request: { organization_id: string; contact_id: string; tags: string[]; source?: string }; answer: ContactView };
  [MessagingRpc.ContactUpdate]: { request: ContactUpdateData; answer: ContactView };
  [MessagingRpc.ConversationGet]: { request: { organization_id: string; conversation_id: string }; answer: ConversationView };
  [MessagingRpc.ConversationList]: { request: { organization_id: string; status?: ConversationStatus; channel?: string; contact_id?: string; cursor?: string; limit?: number }; answer: MessagingPage<ConversationView> };
  [MessagingRpc.ConversationMessages]: { request: { organization_id: string; conversation_id: string; cursor?: string; limit?: number }; answer: MessagingPage<MessageView> };
  [MessagingRpc.ConversationResolve]: { request: { organization_id: string; conversation_id: string; resolved_by?: string }; answer: ConversationView };
  [MessagingRpc.ConversationSend]: { request: MessagingSendContent & { organization_id: string; conversation_id: string; idempotency_key: string; operator_id?: string }; answer: MessagingSendResult };
  [MessagingRpc.CrmEventIngest]: { request: CrmEventIngestData; answer: CrmEventIngestResult };
  [MessagingRpc.InboundRecord]: { request: MessagingInboundRecordData; answer: { message_id: string | null; duplicate: boolean } };
  [MessagingWhatsAppRpc.Inbound]: { request: WhatsAppInboundBatch & { organization_id?: string }; answer: WhatsAppInboundAccepted };
  [MessagingRpc.PreferenceList]: { request: { organization_id: string; contact_id: string }; answer: { items: { channel: string; enabled: boolean }[] } };
  [MessagingRpc.PreferenceSet]: { request: { organization_id: string; contact_id: string; channel: string; enabled: boolean }; answer: { items: { channel: string; enabled: boolean }[] } };
  [MessagingRpc.TemplateCreate]: { request: NotificationTemplateData; answer: NotificationTemplateView };
  [MessagingRpc.TemplateList]: { request: { organization_id: string }; answer: { items: NotificationTemplateView[] } };
  [MessagingRpc.NotificationCreate]: { request: NotificationCreateData; answer: NotificationView };
  [MessagingRpc.NotificationGet]: { request: { organization_id: string; notification_id: string }; answer: NotificationView };
  [MessagingRpc.NotificationList]: { request: { organization_id: string; contact_id?: string; cursor?: string; limit?: number }; answer: MessagingPage<NotificationView> };
  [MessagingRpc.Send]: { request: MessagingSendData; answer: MessagingSendResult };
  [MessagingRpc.WhatsAppStatuses]: { request: WhatsAppStatusBatch & { organization_id: string }; answer: { applied: number; ignored: number; pending: number } };
  [MessagingRpc.StreamRead]: { request: MessagingStreamReadData; answer: MessagingStreamPage };
  [OutboxRpc.ListAmbiguous]: { request: OutboxAmbiguousListData; answer: OutboxAmbiguousPage };
  [OutboxRpc.ResolveAmbiguous]: { request: OutboxResolveData; answer: OutboxResolveResult };
  [OutboxRpc.ResolveAmbiguousOrFail]: { request: OutboxResolveData; answer: OutboxResolveResult };
  [OutboxRpc.Cancel]: { request: OutboxCancelData; answer: OutboxCancelResult };
  [OutreachDispatcherRpc.EmailHeaders]: { request: EmailHeadersQuery; answer: EmailHeadersView };
  [OutboxRpc.Enqueue]: { request: OutboxEnqueueData; answer: OutboxEnqueueResult };
  [OutboxRpc.GetEntriesByKey]: { request: OutboxEntriesByKeyData; answer: { items: OutboxEntryView[] } };
  [OutboxRpc.GetEntry]: { request: { organization_id: string; entry_id: string }; answer: OutboxEntryView };
  [OutboxLinkedinRpc.RelationAccepted]: { request: LinkedinRelationAcceptedData; answer: { stored: boolean; sender_id: string | null } };
  [OutreachDispatcherRpc.LinkedinState]: { request: LinkedinStateQuery; answer: LinkedinStateView };
  [OutboxAccountRpc.ProspectCapCheck]: { request: OutboxProspectCapCheckData; answer: OutboxProspectCapCheckResult };
  [OutboxAccountRpc.ProspectCapGet]: { request: { organization_id: string }; answer: OutboxProspectCapView };
  [OutboxAccountRpc.ProspectCapSet]: { request: OutboxProspectCapData; answer: OutboxProspectCapView };
  [OutboxRpc.SenderCreate]: { request: OutboxSenderCreateData; answer: OutboxSenderView };
  [OutboxAccountRpc.Create]: { request: OutboxAccountCreateData; answer: OutboxSenderView };
  [OutboxRpc.SenderGet]: { request: { organization_id: string; sender_id: string }; answer: OutboxSenderView };
  [OutboxRpc.SenderList]: { request: { organization_id: string; channel?: 'whatsapp' | 'email' | 'linkedin' }; answer: { items: OutboxSenderView[] } };
  [OutreachDispatcherRpc.SenderLookupByAccount]: { request: ProviderAccountLookup; answer: ProviderAccountOwner };
  [OutboxRpc.SenderLookupByPhoneNumberId]: { request: { phone_number_id: string }; answer: { organization_id: string | null; sender_id: string | null } };
  [OutboxRpc.SenderRemove]: { request: { organization_id: string; sender_id: string }; answer: { removed: true } };
  [OutboxRpc.SenderUpdate]: { request: OutboxSenderUpdateData; answer: OutboxSenderView };
  [OutboxAccountRpc.SuppressionAdd]: { request: OutboxSuppressionData; answer: OutboxSuppressionAddResult };
  [OutreachDispatcherRpc.SuppressionCheck]: { request: SuppressionCheckData; answer: SuppressionCheckResult };
  [OutboxAccountRpc.SuppressionRemove]: { request: OutboxSuppressionData; answer: OutboxSuppressionRemoveResult };
  [OutboxAccountRpc.SuppressionList]: { request: OutboxSuppressionListData; answer: OutboxSuppressionPage };
  [OutboxRpc.WhatsAppStatuses]: { request: WhatsAppStatusBatch; answer: { stored: number; outcomes: { id: string; status: string; outcome: string }[] } };
  [OutboxRpc.WhatsAppWebhookErrors]: { request: WhatsAppWebhookErrorBatch; answer: { stored: number; paused_until: string | null } };
  [OutreachRpc.ActionApprove]: { request: ActionApproveData; answer: ActionView };
  [OutreachRpc.ActionList]: { request: ReviewQueueQuery; answer: ReviewQueuePage };
  [OutreachRpc.ActionReject]: { request: ActionRejectData; answer: ActionView };
  [OutreachRpc.CampaignArchive]: { request: CampaignRef; answer: CampaignView };
  [OutreachRpc.CampaignCreate]: { request: CampaignCreateData; answer: CampaignView };
  [OutreachRpc.CampaignDelete]: { request: CampaignRef; answer: { deleted: true; campaign_id: string } };
  [OutreachRpc.CampaignGet]: { request: CampaignRef; answer: CampaignView };
  [OutreachRpc.CampaignList]: { request: { organization_id: string; status?: 'active' | 'paused' | 'archived' }; answer: { items: CampaignView[] } };
  [OutreachRpc.CampaignPause]: { request: CampaignRef; answer: CampaignView };
  [OutreachRpc.CampaignResume]: { request: CampaignRef; answer: CampaignView };
  [OutreachSuppressionRpc.EmailBounce]: { request: EmailBounceData; answer: EmailSuppressionResult };
  [OutreachSuppressionRpc.EmailUnsubscribe]: { request: EmailUnsubscribeData; answer: EmailSuppressionResult };
  [OutreachRpc.EnrollBatch]: { request: EnrollBatchData; answer: EnrollBatchResult };
  [OutreachRpc.EnrollOne]: { request: EnrollOneData; answer: OutreachEnrollmentView & { created: boolean } };
  [OutreachRpc.EnrollmentExit]: { request: OutreachEnrollmentRef; answer: OutreachEnrollmentView };
  [OutreachRpc.EnrollmentGet]: { request: OutreachEnrollmentRef; answer: OutreachEnrollmentView };
  [OutreachRpc.EnrollmentList]: { request: OutreachEnrollmentListQuery; answer: { items: OutreachEnrollmentView[]; next_cursor: string | null } };
  [OutreachRpc.EnrollmentManualRetry]: { request: OutreachEnrollmentRef; answer: OutreachEnrollmentView };
  [OutreachRpc.EnrollmentTimeline]: { request: OutreachEnrollmentRef; answer: { enrollment_id: string; items: TimelineItem[]; missing: string[] } };
  [OutreachRpc.Resume]: { request: { organization_id: string }; answer: OutreachSettingsView };
  [OutreachRpc.SettingsGet]: { request: { organization_id: string }; answer: OutreachSettingsView };
  [OutreachRpc.Stop]: { request: { organization_id: string }; answer: OutreachSettingsView };
  [PlatformRpc.Ping]: { request: Record<string, never>; answer: { service: string; ok: true } };
}

/** An RPC pattern some service answers. */
export type RpcPattern = keyof RpcContract;
/** What a caller of `P` sends (the gateway adds `organization_id` itself, see `ServiceForwarder`). */
export type RpcRequest<P extends RpcPattern> = RpcContract[P]['request'];
/** What the handler of `P` answers. */
export type RpcAnswer<P extends RpcPattern> = RpcContract[P]['answer'];
