"""Authorization codes name the family of the tokens descended from them (issue #35).

Existing codes take the family their exchange gave its tokens (rotation always copied it), so a
replay of a code issued before this migration still revokes every token rotated from it; a code
never exchanged gets a family of its own."""

import uuid

from django.db import migrations, models


def families_from_tokens(apps, schema_editor):
    AuthorizationCode = apps.get_model("oauth", "AuthorizationCode")
    Token = apps.get_model("oauth", "Token")
    for code in AuthorizationCode.objects.filter(family__isnull=True).iterator():
        issued = Token.objects.filter(code=code).values_list("family", flat=True).first()
        code.family = issued or uuid.uuid4()
        code.save(update_fields=["family"])


class Migration(migrations.Migration):

    dependencies = [
        ("oauth", "0003_client_metadata_document"),
    ]

    operations = [
        migrations.AddField(
            model_name="authorizationcode",
            name="family",
            field=models.UUIDField(null=True),
        ),
        migrations.RunPython(families_from_tokens, migrations.RunPython.noop),
    ]
