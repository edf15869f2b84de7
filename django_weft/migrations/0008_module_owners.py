"""Stored modules get an owner, an approved revision and their permissions.

- ``Module.owner``: who created the module. Existing rows get **no owner**: only users
  with ``manage_module`` may change, approve or delete them from now on.
- ``Module.approved``: the revision runs execute. Each existing module's latest revision
  (the one that ran until now) is approved, by nobody (``approved_by`` empty: approved
  by this migration), at the time it was saved; a module stored without a revision in
  its history (written straight through the ORM) gets one from its row first.
- The permissions ``manage_module``, ``grant_host_function`` and ``use_module``.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def approve_latest_revisions(apps, schema_editor):
    """Approve each module's latest revision, as it ran before owners existed."""
    Module = apps.get_model("django_weft", "Module")
    ModuleRevision = apps.get_model("django_weft", "ModuleRevision")
    for module in Module.objects.filter(approved__isnull=True).iterator():
        latest, _ = ModuleRevision.objects.get_or_create(
            module=module,
            revision=module.revision,
            defaults={"source": module.source, "grants": module.grants},
        )
        ModuleRevision.objects.filter(pk=latest.pk).update(approved_at=latest.created_at)
        Module.objects.filter(pk=module.pk).update(approved=latest)
    if schema_editor.connection.vendor == "postgresql":
        # Check the new foreign keys now: PostgreSQL refuses the indexes this migration
        # creates last while their deferred checks are pending.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0007_overview"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="module",
            options={
                "ordering": ["name"],
                "permissions": [
                    ("manage_module", "Can change and approve anyone's module"),
                    ("grant_host_function", "Can grant host functions to modules"),
                    ("use_module", "Can call any module from a run or schedule"),
                ],
            },
        ),
        migrations.AddField(
            model_name="module",
            name="approved",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                help_text="The revision runs execute.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="django_weft.modulerevision",
            ),
        ),
        migrations.AddField(
            model_name="module",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                help_text="Who created it; without one, only module managers may change it.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="weft_modules",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="modulerevision",
            name="approved_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="modulerevision",
            name="approved_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="weft_module_approvals",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(approve_latest_revisions, migrations.RunPython.noop),
    ]
