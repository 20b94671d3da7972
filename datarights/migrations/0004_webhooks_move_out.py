# The webhook models now belong to the webhooks app (webhooks.0001, which must run first so no
# state is ever without them). State only: the tables stay where they are, under their names.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("datarights", "0003_import_job"),
        ("webhooks", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="WebhookDelivery"),
                migrations.DeleteModel(name="WebhookEndpoint"),
            ],
        ),
    ]
