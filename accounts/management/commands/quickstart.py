"""``manage.py quickstart --email E [--project NAME] [--json]``: a user, a project and a new key,
and (without ``--json``) a one-time link that signs the user into the dashboard."""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from accounts import services
from mmw.errors import MMWError

LOCAL_NAMES = frozenset({"localhost"})


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
        try:  # whoever runs this on a server on this machine vouches for the address
            token = services.sign_in_link_create(user=user, verify_email=local_server(base))
            sign_in = f"{base}{reverse('dashboard:sign-in-link', args=[token])}   (one-time, valid 1 hour)"
        except MMWError as exc:
            sign_in = f"none: {exc.message}"
        self.stdout.write(_human(payload, user.email, project.name, sign_in))


def local_server(public_url: str) -> bool:
    """Whether the server's public address is this machine (loopback), as on ``make run``."""
    host = urlsplit(public_url).hostname or ""
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _human(p: dict[str, str], email: str, project: str, sign_in: str) -> str:
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
            f"Dashboard:  {sign_in}",
            "",
            "Claude Code:",
            f'  claude mcp add --transport http mmw {p["mcp_url"]} --header "Authorization: Bearer {p["api_key"]}"',
            "",
            "Any MCP client (JSON):",
            json.dumps(client, indent=2),
        ]
    )
