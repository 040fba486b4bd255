"""WebSocket consumer streaming progress messages for one topic (e.g. a campaign)."""

from __future__ import annotations

import re
from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from overeager.blind import may_follow
from overeager.roles import roles_of
from runs.progress import group_name

TOPIC_RE = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")


class ProgressConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        topic = self.scope["url_route"]["kwargs"]["topic"]
        # Anonymous users and users without a role never get a socket: close before accept.
        if user is None or not user.is_authenticated or not TOPIC_RE.match(topic):
            await self.close(code=4401)
            return
        if not await self._may_follow(user, topic):
            await self.close(code=4403)
            return
        self.group = group_name(topic)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def _may_follow(self, user: Any, topic: str) -> bool:
        from channels.db import database_sync_to_async

        def check() -> bool:
            # A role, and the blindness rule: a validator-only account follows no results topic
            # (run events carry verdicts, campaign summaries the count of overeager runs).
            return bool(roles_of(user)) and may_follow(user, topic)

        return bool(await database_sync_to_async(check)())

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def progress_message(self, event: dict[str, Any]) -> None:
        await self.send_json({"topic": event["topic"], "seq": event["seq"], "data": event["data"]})
