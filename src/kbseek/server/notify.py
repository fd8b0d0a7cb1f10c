"""``notifications/resources/list_changed``: telling connected hosts that the offered set moved.

Hosts refresh their ``@`` menu from it. Handshake-era sessions are remembered
when they finish initializing and notified directly; sessions on the
subscription protocol get the event through the SDK's subscription bus.
Index passes run on worker threads, so the broadcast hops to the event loop.
"""

import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import ResourcesListChanged, SubscriptionBus

log = logging.getLogger(__name__)


class ListChangedNotifier:
    """Server middleware that records sessions, plus the broadcast an index listener calls."""

    def __init__(self, bus: SubscriptionBus) -> None:
        self._bus = bus
        # The SDK hands out a session object per request, so hold them strongly; a closed one is
        # dropped when sending to it fails.
        self._sessions: list[Any] = []
        self._token: Any = None

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        if self._token is None:
            self._token = anyio.lowlevel.current_token()
        result = await call_next(ctx)
        if getattr(ctx, "method", None) == "notifications/initialized":
            session = getattr(ctx, "session", None)
            if session is not None:
                self._sessions.append(session)
        return result

    async def broadcast(self) -> None:
        await self._bus.publish(ResourcesListChanged())
        for session in list(self._sessions):
            try:
                await session.send_resource_list_changed()
            except Exception:  # closed or broken: that host has gone away
                self._sessions.remove(session)
                log.debug("dropping a session that could not be notified", exc_info=True)

    def broadcast_from_thread(self) -> None:
        """Called by the knowledge base after a pass that changed the servable set; never blocks, never raises.

        The pass may run on any thread, the event loop's own included, so the hop
        to the loop happens on a short-lived thread of its own.
        """
        token = self._token
        if token is None:
            return  # no session has connected yet: nobody to tell

        def send() -> None:
            try:
                anyio.from_thread.run(self.broadcast, token=token)
            except BaseException:  # the loop closed or cancelled the call: the session is gone
                log.debug("list_changed not sent: the event loop is gone", exc_info=True)

        threading.Thread(target=send, name="kbseek-list-changed", daemon=True).start()


def declare_list_changed(lowlevel: Any) -> None:
    """Advertise ``resources.listChanged`` in the handshake, because this server does send it."""
    original = lowlevel.create_initialization_options

    def with_list_changed(
        notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        options = notification_options or NotificationOptions(resources_changed=True)
        options.resources_changed = True
        return original(options, *args, **kwargs)

    lowlevel.create_initialization_options = with_list_changed
