//! The rmcp `ServerHandler` of [`McpServer`]: one file per MCP area (`tools.rs`,
//! `resources.rs`, `prompts.rs`, `completion.rs`, `tasks.rs`; the log of each request is
//! forwarded by `crate::logging`), and the requests rmcp could not parse (`requests.rs`).
//! Lifecycles (`initialize`, `server/discover`, `ping`) are rmcp's, but for what `initialize`
//! says of tasks.
// MCP's logging types are marked deprecated in rmcp (see `crate::logging`).
#![allow(deprecated)]

mod completion;
mod progress;
mod prompts;
mod requests;
mod resources;
mod tasks;
mod tools;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
        CompleteRequestParams, CompleteResult, CustomRequest, CustomResult, GetPromptRequestParams,
        GetPromptResponse, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        LoggingLevel, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, TASKS_EXTENSION_ID, Tool, UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};

use crate::{logging::with_client_log, server::McpServer};

impl McpServer {
    /// The least severe level the client wants the request's events at: per request on
    /// 2026-07-28, for the session before.
    fn log_level(&self, context: &RequestContext<RoleServer>) -> Option<LoggingLevel> {
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if modern {
            context.meta.log_level()
        } else {
            self.session.log_level()
        }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // Tasks are the 2026-07-28 extension's (SEP-2663), served on requests of that
        // revision only: a session that begins with `initialize` is not told of them.
        if let Some(extensions) = result.capabilities.extensions.as_mut() {
            extensions.remove(TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                result.capabilities.extensions = None;
            }
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = crate::scope::context_of(&self.context, &context);
        let catalog = self.runtime.catalog();
        if !caller.restricts_tools() && !catalog.disabled().disables_tools() {
            return Ok(self.listing.result());
        }
        // The caller sees only what it may call, of what the catalog serves now.
        Ok(self.listing.result_for(|name| {
            catalog
                .get(name)
                .is_some_and(|entry| caller.allows_tool(entry))
        }))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listing.get(name).cloned()
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed, as is every handler whose future is large: rmcp's future for a request is as
        // large as the largest of them, and rmcp and tokio move it by copy as they spawn and
        // finish its task (several copies of a few KiB, against one allocation).
        match self.log_level(&context) {
            None => Box::pin(tools::call(self, params, context)).await,
            level => {
                let peer = context.peer.clone();
                Box::pin(with_client_log(
                    &peer,
                    level,
                    tools::call(self, params, context),
                ))
                .await
            }
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        resources::list(self, request.as_ref(), &context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        resources::templates(self, request.as_ref(), &context)
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (peer, level) = (context.peer.clone(), self.log_level(&context));
        // Boxed, as are calls, prompts and completions (see `call_tool`).
        Box::pin(with_client_log(
            &peer,
            level,
            resources::read(self, params, context),
        ))
        .await
    }

    // rmcp marks these legacy (2026-07-28 replaced them with `subscriptions/listen`); it
    // routes them on older sessions only, and both are served.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        requests::in_revision("resources/subscribe", context.protocol_version().as_ref())?;
        self.session
            .subscriptions
            .subscribe(&self.runtime, &self.context, &params, &context)
            .await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        requests::in_revision("resources/unsubscribe", context.protocol_version().as_ref())?;
        self.session.subscriptions.unsubscribe(&params);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.session
            .subscriptions
            .accepted_filter(&self.runtime, requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.session
            .subscriptions
            .listen(&self.runtime, &self.context, context)
            .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // The older lifecycle: list changes are told to every initialized session.
        self.session
            .subscriptions
            .start_legacy(&self.runtime, &context.peer);
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        prompts::list(self, request.as_ref(), &context)
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (peer, level) = (context.peer.clone(), self.log_level(&context));
        Box::pin(with_client_log(
            &peer,
            level,
            prompts::get(self, params, context),
        ))
        .await
    }

    async fn complete(
        &self,
        params: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let (peer, level) = (context.peer.clone(), self.log_level(&context));
        Box::pin(with_client_log(
            &peer,
            level,
            completion::complete(self, params, context),
        ))
        .await
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // 2026-07-28 has no session level: the level travels with each request.
        requests::in_revision("logging/setLevel", context.protocol_version().as_ref())?;
        self.session.set_log_level(params.level);
        Ok(())
    }

    async fn get_task(
        &self,
        params: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::get(self, params, &context).await
    }

    async fn update_task(
        &self,
        params: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::update(self, params, &context).await
    }

    async fn cancel_task(
        &self,
        params: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::cancel(self, params, &context).await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        // rmcp has already cancelled the request's token, which stops the execution.
        tracing::debug!(
            request_id = ?notification.request_id,
            reason = notification.reason.as_deref().unwrap_or(""),
            "the client cancelled a request"
        );
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(requests::unparsed(
            request,
            context.protocol_version().as_ref(),
        ))
    }
}
