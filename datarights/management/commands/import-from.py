"""``manage.py import-from SERVICE FILE --account T [--project P]``: another memory service's export
into a project (docs/export-format.md, "Importing from another service"). All or nothing unless
``--partial``; importing the same file again adds nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.keys import VIA_DASHBOARD, Principal, principal_for
from accounts.models import ALL_SCOPES, Account, Project, User
from datarights import export
from datarights.importers.items import Upload
from datarights.importers.services import SERVICES, PeerImportRefused, peer_import
from mmw.errors import MMWError
from orgs.models import Membership


class Command(BaseCommand):
    help = "Import another memory service's export (mem0, basic-memory, Letta, Supermemory) into a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("service", choices=SERVICES)
        parser.add_argument("file", help="the export: a JSON file (gzip or plain), or basic-memory's notes folder")
        parser.add_argument("--account", required=True, help="tenant id, or the e-mail of a personal account's owner")
        parser.add_argument("--project", help="project id or name (default: the account's only project)")
        parser.add_argument("--workspace", default="default", help='the workspace written into (default "default")')
        parser.add_argument("--as", dest="as_user", help="the member written as (default: the account's first owner)")
        parser.add_argument(
            "--partial", action="store_true", help="import the good items when some cannot be (they are listed)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            account = export.account_for_operator(options["account"])
            project = _project(account, options["project"])
            principal = _principal(account, project, options["as_user"])
            report = peer_import(
                principal=principal,
                service=options["service"],
                upload=Upload.of_path(options["file"]),
                workspace=options["workspace"],
                partial=options["partial"],
            )
        except PeerImportRefused as exc:
            raise CommandError(
                "\n  ".join(
                    [
                        f"import refused, nothing was written ({exc.report.refused_count} item(s) cannot be imported;"
                        " --partial imports the others):",
                        *exc.report.refused,
                    ]
                )
            ) from exc
        except MMWError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(report.summary())
        for line in report.skipped_items[:50]:
            self.stdout.write(f"  skipped {line}")
        if report.refused_count:
            self.stderr.write(f"{report.refused_count} item(s) were not imported (--partial):")
            for line in report.refused:
                self.stderr.write(f"  {line}")


def _project(account: Account, name: str | None) -> Project:
    if name:
        return export.project_for_operator(account, name)
    projects = list(Project.objects.filter(account=account, deleted_at__isnull=True)[:2])
    if not projects:
        raise CommandError("the account has no project")
    if len(projects) > 1:
        raise CommandError("the account has several projects: name one with --project")
    return projects[0]


def _principal(account: Account, project: Project, email: str | None) -> Principal:
    """The member the records are written as: a person at the server's console, like the
    dashboard (not metered), with every scope; the plan's quotas still apply."""
    members = Membership.objects.filter(account=account, is_active=True).select_related("user")
    if email:
        membership = members.filter(user__email=email.strip().lower()).first()
        if membership is None:
            raise CommandError(f"{email} is not an active member of the account")
    else:
        membership = members.filter(role=Membership.Role.OWNER).order_by("pk").first()
        if membership is None:
            raise CommandError("the account has no active owner: name a member with --as")
    user: User = membership.user
    principal = principal_for(user=user, project=project, scopes=frozenset(ALL_SCOPES), via=VIA_DASHBOARD)
    if principal is None:
        raise CommandError(f"{user.email} may not use project {project.name!r}")
    return principal
