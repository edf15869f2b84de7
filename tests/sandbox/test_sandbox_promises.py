"""docs/sandbox.md, sentence by sentence: every promise it makes names the test that fails
when it breaks (the machinery is tests/promises.py, shared with docs/security.md's).

``PROMISES`` maps an excerpt of each promise sentence to a test (``path::function``; for a
parametrized test, its function). Every named test must exist, and every sentence of the
page's prose holding a promise word must be in the table or in ``NOT_PROMISES``.
"""

from __future__ import annotations

import pytest

from tests.promises import ROOT, check_named, unlisted

PAGE = ROOT / "docs" / "sandbox.md"

ESCAPES = "tests/sandbox/test_sandbox_escapes.py"
CORPUS = "tests/sandbox/test_escape_corpus.py"
PYTHON = "tests/sandbox/test_python_layers.py"
KERNEL = "tests/sandbox/test_kernel_layers.py"
LAYERS = "tests/sandbox/test_sandbox_layers.py"
CHECKS = "tests/sandbox/test_sandbox_checks.py"
RUNNER = "tests/sandbox/test_sandbox_runner.py"
MODULES = "tests/sandbox/test_sandbox_modules.py"
PERMISSIONS = "tests/sandbox/test_module_permissions.py"
ENDINGS = "tests/sandbox/test_sandbox_endings.py"

#: (an excerpt of the promise sentence, the test that fails when it breaks)
PROMISES: list[tuple[str, str]] = [
    (
        "The button and the action approve the revision they showed",
        "tests/console/test_console_module_approvals.py::"
        "test_module_list_action_approves_only_the_revision_its_row_showed",
    ),
    (
        "The button and the action approve the revision they showed",
        "tests/console/test_console_module_approvals.py::"
        "test_module_page_button_refuses_a_revision_saved_since_the_page_was_shown",
    ),
    (
        "Every failure ends the run `failed` with an error",
        f"{ESCAPES}::test_escape_worker_runs_on_after_every_failure",
    ),
    (
        "**Imports**: only the modules in `WEFT_SANDBOX_IMPORTS`",
        f"{ESCAPES}::test_escape_import_os",
    ),
    (
        "holding only the names on that module's **allow-list**",
        f"{PYTHON}::test_python_layers_helpers_of_allowed_modules",
    ),
    (
        "holding only the names on that module's **allow-list**",
        f"{ESCAPES}::test_escape_import_from_allowed_module",
    ),
    (
        "needs its allow-list in `WEFT_SANDBOX_IMPORT_NAMES`",
        f"{PYTHON}::test_python_layers_import_without_allow_list",
    ),
    (
        "needs its allow-list in `WEFT_SANDBOX_IMPORT_NAMES`",
        f"{CHECKS}::test_checks_sandbox_import_without_allow_list",
    ),
    (
        "**Helpers refused on every list**, each naming why",
        f"{PYTHON}::test_python_layers_helpers_of_allowed_modules",
    ),
    (
        "**Helpers refused on every list**, each naming why",
        f"{PYTHON}::test_python_layers_operator_helpers",
    ),
    (
        "**Helpers refused on every list**, each naming why",
        f"{PYTHON}::test_python_layers_allowed_helpers_still_work",
    ),
    (
        "A project cannot list them back (`django_weft.E040`)",
        f"{CHECKS}::test_checks_sandbox_import_names_invalid",
    ),
    (
        "Its allowed events and the module's code object are fixed in a closure",
        f"{PYTHON}::test_python_layers_audit_hook_frozen_and_one_way",
    ),
    ("The answer must be JSON (no sets, no NaN)", f"{RUNNER}::test_module_answer_not_json"),
    ("The answer must be JSON (no sets, no NaN)", f"{ESCAPES}::test_escape_huge_answer"),
    (
        "A module reaches the host only through host functions it is **granted**",
        f"{ESCAPES}::test_escape_ungranted_host_function",
    ),
    (
        "Granting is a permission of its own, `grant_host_function`",
        f"{PERMISSIONS}::test_module_grant_needs_grant_host_function",
    ),
    (
        "The **host** checks each call against the module's grants, not the child",
        f"{ESCAPES}::test_escape_forged_message_from_a_taken_over_child",
    ),
    (
        "A call of a function the module is **not granted** ends the run `failed`",
        f"{ESCAPES}::test_escape_ungranted_host_function",
    ),
    (
        "Grants are checked when the module is saved",
        f"{MODULES}::test_save_module_refuses_bad_grants",
    ),
    (
        "An unknown one is refused naming only it",
        f"{MODULES}::test_save_module_names_only_the_unknown_grant",
    ),
    (
        "Only its owner, or a user with **`manage_module`**",
        f"{PERMISSIONS}::test_module_change_module_alone_cannot_change_someone_elses",
    ),
    (
        "Only its owner, or a user with **`manage_module`**",
        f"{PERMISSIONS}::test_module_delete_needs_owner_or_manager",
    ),
    (
        "Modules stored before owners existed have none",
        f"{PERMISSIONS}::test_module_without_owner_is_changed_only_by_managers",
    ),
    (
        "**Granting** a host function needs `grant_host_function`",
        f"{PERMISSIONS}::test_module_approving_a_grant_needs_grant_host_function",
    ),
    (
        "A start or schedule may call a module only if its **owner may use it**",
        f"{PERMISSIONS}::test_module_start_needs_the_right_to_use_it",
    ),
    ("leave state for the next call", f"{ESCAPES}::test_escape_state_left_for_the_next_call"),
    ("leave state for the next call", f"{RUNNER}::test_pool_children_serve_one_call_each"),
    (
        "**Reading**: a module can read the standard library's sources",
        f"{KERNEL}::test_kernel_layer_landlock_alone",
    ),
    (
        "The tests run each set of layers with the other switched off",
        f"{PYTHON}::test_python_layers_escapes_of_allowed_helpers",
    ),
    (
        "The tests run each set of layers with the other switched off",
        f"{KERNEL}::test_kernel_layers_contain_plain_python",
    ),
    ("**The Python layers alone**", f"{PYTHON}::test_python_layers_escapes_of_allowed_helpers"),
    ("**The Python layers alone**", f"{PYTHON}::test_python_layers_format_through_super"),
    ("**The Python layers alone**", f"{PYTHON}::test_python_layers_walks_refused"),
    ("**A refusal cannot be erased**", f"{PYTHON}::test_python_layers_erasing_a_refusal_alone"),
    (
        "**A refusal cannot be erased**",
        f"{PYTHON}::test_python_layers_host_keeps_the_first_refusal",
    ),
    (
        "**The audit hook cannot be reached or replaced**",
        f"{PYTHON}::test_python_layers_audit_hook_frozen_and_one_way",
    ),
    ("**The kernel layers alone**", f"{KERNEL}::test_kernel_layers_contain_plain_python"),
    ("**The kernel layers alone**", f"{KERNEL}::test_kernel_layers_test_mode_is_no_setting"),
    ("**The kernel layers alone**", f"{KERNEL}::test_kernel_layers_inherited_descriptor_is_real"),
    (
        "A module runs only where the **containing** layers are all active",
        f"{LAYERS}::test_layers_containing_layer_off_fails_closed",
    ),
    (
        "A module runs only where the **containing** layers are all active",
        f"{LAYERS}::test_layers_one_file_layer_is_enough",
    ),
    (
        "A module runs only where the **containing** layers are all active",
        f"{LAYERS}::test_layers_no_file_layer_that_starts_fails_closed",
    ),
    (
        "A module runs only where the **containing** layers are all active",
        f"{CORPUS}::test_escape_corpus",
    ),
    (
        "At start-up two system checks say the same before any run",
        f"{CHECKS}::test_checks_sandbox_containing_layer_left_out",
    ),
    (
        "At start-up two system checks say the same before any run",
        f"{CHECKS}::test_checks_sandbox_host_without_a_file_layer",
    ),
    (
        "At start-up two system checks say the same before any run",
        f"{CHECKS}::test_checks_sandbox_host_that_forbids_namespaces",
    ),
    (
        "the system check `django_weft.W030` warns while it is on",
        f"{CHECKS}::test_checks_sandbox_unsafe_uncontained_warns",
    ),
    (
        "the system check `django_weft.W030` warns while it is on",
        f"{CHECKS}::test_checks_sandbox_unsafe_uncontained_invalid",
    ),
    (
        "the system check `django_weft.W030` warns while it is on",
        f"{LAYERS}::test_layers_unsafe_uncontained_runs_with_what_starts",
    ),
    ("Every setting is read at each call", f"{RUNNER}::test_runner_closed_when_settings_change"),
    (
        "Every setting is read at each call",
        f"{RUNNER}::test_pool_discards_children_set_up_under_other_settings",
    ),
    (
        "The worker records the report, refuses the call if the layers cannot contain",
        f"{LAYERS}::test_layers_containing_layer_off_fails_closed",
    ),
    (
        "The worker records the report, refuses the call if the layers cannot contain",
        f"{LAYERS}::test_layers_required_but_cannot_start",
    ),
    (
        "The worker's `ProcessRunner` starts `python -I -B -X utf8 -m",
        f"{KERNEL}::test_kernel_layers_inherited_descriptor_is_real",
    ),
    (
        "The child names only the line number and function of each frame",
        "tests/sandbox/test_module_frames.py::test_line_text_comes_from_the_hosts_source",
    ),
    (
        "Nothing needs root",
        "tests/sandbox/test_sandbox_process.py::test_ci_runs_the_sandbox_tests_unprivileged",
    ),
]

#: Sentences with a promise word that promise nothing of the code's: pointers and advice.
NOT_PROMISES = (
    "See [security.md](security.md",
    "**Write a host function as you would write an API endpoint for an anonymous client**",
)


@pytest.mark.parametrize(("excerpt", "node"), PROMISES, ids=[f"{n}:{e[:30]}" for e, n in PROMISES])
def test_sandbox_promise_names_a_test_that_exists(excerpt: str, node: str) -> None:
    """Each named test is a test function of its module, and its excerpt is on the page."""
    check_named(PAGE, excerpt, node)


def test_sandbox_every_promise_sentence_has_a_test() -> None:
    """Every sentence of docs/sandbox.md that promises is listed with its test."""
    assert unlisted(PAGE, [excerpt for excerpt, _ in PROMISES] + list(NOT_PROMISES)) == []
