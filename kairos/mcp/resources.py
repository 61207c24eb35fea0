"""MCP resources: list (paged), templates, read, and subscriptions in both eras. The URI
forms are ``domain.resources``; the records come from the service, for the caller that
``identify`` names, so spaces and tokens apply exactly as for tools."""

from __future__ import annotations

from functools import cache
from importlib import resources as package_files
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..domain import resources as res
from ..domain.texts import MIME_MARKDOWN
from .guarded import connection_of, guarded, mcp_error
from .subscriptions import Subscriptions

if TYPE_CHECKING:
    from .server import Identify, ServiceRef

Ctx = ServerRequestContext[Any, Any]
_GUIDE = next(k for k in res.KINDS if k.name == res.GUIDE)


@cache
def guide() -> str:
    """``kairos://guide``: a file of the package."""
    return package_files.files(__package__).joinpath("guide.md").read_text("utf-8")


def resource_handlers(service: ServiceRef, identify: Identify, subs: Subscriptions, *,
                      legacy_subscriptions: bool = True) -> dict[str, Any]:
    """The ``Server`` constructor arguments that serve resources. Without
    ``legacy_subscriptions`` (stateless HTTP: no channel to carry a notification)
    ``resources/subscribe`` is not served, and the handshake-era capability says so."""

    def caller(ctx: Ctx) -> Any:
        subs.bind()
        return identify(ctx.request)[0]

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        who, cursor = caller(ctx), params.cursor if params else None
        page = await guarded("resources/list",
                             lambda: service.get().list_resources(cursor, who))
        items = [types.Resource(uri=i["uri"], name=i["name"], title=i["title"],
                                mime_type=i["mime_type"],
                                annotations=types.Annotations(last_modified=i["updated_at"]))
                 for i in page["resources"]]
        if cursor is None:
            items.insert(0, types.Resource(uri=res.GUIDE_URI, name=res.GUIDE,
                                           title=_GUIDE.title, description=_GUIDE.description,
                                           mime_type=MIME_MARKDOWN))
        return types.ListResourcesResult(resources=items, next_cursor=page["next_cursor"])

    async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=k.template, name=k.name, title=k.title,
                                   description=k.description, mime_type=k.mime_type)
            for k in res.TEMPLATES])

    async def read(uri: str, who: Any) -> types.TextResourceContents:
        if uri == res.GUIDE_URI:
            return types.TextResourceContents(uri=uri, mime_type=MIME_MARKDOWN, text=guide())
        body = await guarded("resources/read", lambda: service.get().read_resource(uri, who))
        return types.TextResourceContents(uri=uri, mime_type=body["mime_type"],
                                          text=body["text"])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[await read(str(params.uri), caller(ctx))])

    async def check(uri: str, who: Any) -> None:
        """What the caller cannot read, it cannot watch."""
        if uri != res.GUIDE_URI:
            await guarded("resources/subscribe",
                          lambda: service.get().check_resource(uri, who))

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        who, uri = caller(ctx), str(params.uri)
        await check(uri, who)
        if not subs.subscribe(who.space, uri, connection_of(ctx), ctx.session):
            raise MCPError(types.INTERNAL_ERROR, "Too many subscriptions; retry later.")
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams
                          ) -> types.EmptyResult:
        subs.unsubscribe(caller(ctx).space, str(params.uri), connection_of(ctx))
        return types.EmptyResult()

    async def listen(ctx: Ctx, params: types.SubscriptionsListenRequestParams
                     ) -> types.SubscriptionsListenResult:
        who = caller(ctx)
        wanted = params.notifications.resource_subscriptions or []
        readable = []
        for uri in wanted:  # the others are left out of the acknowledged filter
            try:
                await check(uri, who)
                readable.append(uri)
            except MCPError as exc:
                if exc.code != types.INVALID_PARAMS:
                    raise
        notifications = params.notifications.model_copy(
            update={"resource_subscriptions": readable or None})
        return await subs.listener(who.space)(
            ctx, params.model_copy(update={"notifications": notifications}))

    handlers: dict[str, Any] = {
        "on_list_resources": list_resources, "on_list_resource_templates": list_templates,
        "on_read_resource": read_resource, "on_subscriptions_listen": listen}
    if legacy_subscriptions:
        handlers.update(on_subscribe_resource=subscribe,
                        on_unsubscribe_resource=unsubscribe)
    return handlers


__all__ = ["guide", "mcp_error", "resource_handlers"]
