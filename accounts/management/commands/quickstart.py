"""``manage.py quickstart --email E [--project NAME] [--json]``: a user, a project and a new key."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts import services
from mmw.errors import MMWError


class Command(BaseCommand):
    help = "Create (or reuse) a user, their personal account and a project, and issue a new API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", required=True)
        parser.add_argument("--project", default="default")
        parser.add_argument("--device-label", default="quickstart")
        parser.add_argument("--json", action="store_true", help="print exactly the five fields as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user, _ = services.user_get_or_create(email=options["email"])
            account = services.personal_account(user=user)
            project, _ = services.project_get_or_create(account=account, name=options["project"], actor=user)
            issued = services.api_key_create(
                user=user, project=project, name="quickstart", device_label=options["device_label"]
            )
        except MMWError as exc:
            raise CommandError(exc.message) from exc
        base = settings.PUBLIC_URL
        payload = {
            "api_key": issued.raw,
            "mcp_url": f"{base}/mcp",
            "api_url": f"{base}/api/v1",
            "tenant_id": account.tenant_id,
            "project_id": str(project.id),
        }
        if options["json"]:
            self.stdout.write(json.dumps(payload))
            return
        self.stdout.write(_human(payload, user.email, project.name))


def _human(p: dict[str, str], email: str, project: str) -> str:
    client = {
        "mcpServers": {
            "mmw": {"type": "http", "url": p["mcp_url"], "headers": {"Authorization": f"Bearer {p['api_key']}"}}
        }
    }
    return "\n".join(
        [
            f"User:       {email}",
            f"Tenant:     {p['tenant_id']}",
            f"Project:    {project} ({p['project_id']})",
            f"API key:    {p['api_key']}   (shown once — store it now)",
            f"MCP URL:    {p['mcp_url']}",
            f"REST base:  {p['api_url']}",
            "",
            "Claude Code:",
            f'  claude mcp add --transport http mmw {p["mcp_url"]} --header "Authorization: Bearer {p["api_key"]}"',
            "",
            "Any MCP client (JSON):",
            json.dumps(client, indent=2),
        ]
    )
