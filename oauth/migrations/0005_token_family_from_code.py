"""The code's family is the one link from a code to its tokens: ``Token.code`` (set on the first
pair only, so a replay missed every rotated pair) goes."""

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("oauth", "0004_authorization_code_family"),
    ]

    operations = [
        migrations.AlterField(
            model_name="authorizationcode",
            name="family",
            field=models.UUIDField(default=uuid.uuid4, unique=True),
        ),
        migrations.RemoveField(
            model_name="token",
            name="code",
        ),
        migrations.AlterField(
            model_name="token",
            name="family",
            field=models.UUIDField(db_index=True),
        ),
    ]
