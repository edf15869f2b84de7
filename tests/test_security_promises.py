"""docs/security.md, sentence by sentence: every promise it makes names the test that fails
when it breaks.

``PROMISES`` maps an excerpt of each promise sentence to a test (``path::function``; for a
parametrized test, its function). The tests below check that every named test exists and
that every sentence of the page's prose (code blocks, tables and headings aside) holding a
promise word is in the table, or in ``NOT_PROMISES`` (pointers to tests and advice to the
reader, which promise nothing of the code's).
"""

from __future__ import annotations

import pytest

from tests.promises import ROOT, check_named, promises_of, prose_sentences, unlisted

PAGE = ROOT / "docs" / "security.md"


MODULES = "tests/sandbox/test_module_permissions.py"
AUDIT = "tests/test_audit.py"
CONSOLE_AUDIT = "tests/console/test_audit.py"
VISIBILITY = "tests/console/test_console_visibility.py"
MATRIX = "tests/test_permissions.py"
INPUT = "tests/api/test_api_input.py"
HEALTH = "tests/observe/test_health.py"
STARTS = "tests/api/test_api_start_fields.py"
FRAMES = "tests/sockets/test_start_frames.py"

#: (an excerpt of the promise sentence, the test that fails when it breaks)
PROMISES: list[tuple[str, str]] = [
    (
        "so a name never imports anything",
        "tests/tasks/test_finding.py::test_a_name_never_imports_the_module_it_points_at",
    ),
    (
        "is an unknown job and its module is not imported",
        "tests/tasks/test_finding.py::test_a_name_never_imports_the_module_it_points_at",
    ),
    (
        "a malformed name (`.relative`) is looked up the same way",
        "tests/tasks/test_finding.py::test_a_malformed_name_is_an_unknown_job_not_an_error",
    ),
    (
        "A deactivated user owns nothing any more",
        "tests/test_operations.py::test_deactivated_owner_may_no_longer_act_on_what_they_own",
    ),
    (
        "the live socket refuses them at connect whatever middleware handed it the",
        "tests/sockets/test_consumers.py::"
        "test_consumer_refuses_a_deactivated_user_whatever_the_middleware",
    ),
    (
        "A refusal raises `django_weft.exceptions.Forbidden`, naming the permission",
        f"{MATRIX}::test_creating_a_schedule_needs_the_right_to_start_runs",
    ),
    (
        "A refusal raises `django_weft.exceptions.Forbidden`, naming the permission",
        f"{MATRIX}::test_pausing_a_queue_needs_its_permission",
    ),
    (
        "changing a schedule's job or args makes the editor its owner",
        f"{MATRIX}::test_a_changed_job_makes_the_editor_the_owner",
    ),
    (
        "*Run now* of such a schedule is refused with the reason",
        "tests/engine/test_fire_permissions.py::test_run_now_of_parked_owner_is_refused_and_starts_nothing",
    ),
    (
        "A schedule that never had an owner (made in code) fires as no one",
        "tests/engine/test_fire_permissions.py::test_schedule_without_owner_fires_as_no_one",
    ),
    (
        "The owner is never typed in",
        "tests/api/test_api.py::test_create_schedule_ignores_an_owner_in_the_body",
    ),
    (
        "The owner is never typed in",
        f"{MODULES}::test_admin_module_add_sets_the_owner_and_refuses_a_grant",
    ),
    (
        "Only its owner, or a user with `manage_module`, changes its source",
        f"{MODULES}::test_module_change_module_alone_cannot_change_someone_elses",
    ),
    (
        "Only its owner, or a user with `manage_module`, changes its source",
        f"{MODULES}::test_module_approval_needs_owner_or_manager",
    ),
    (
        "Only its owner, or a user with `manage_module`, changes its source",
        f"{MODULES}::test_module_delete_needs_owner_or_manager",
    ),
    (
        "Only its owner, or a user with `manage_module`, changes its source",
        f"{MATRIX}::test_permission_matrix",
    ),
    (
        "`change_module` alone opens the admin's form, and its save is refused",
        f"{MODULES}::test_admin_module_change_only_staff_is_refused_on_the_form",
    ),
    (
        "A module without an owner (one stored before owners existed)",
        f"{MODULES}::test_module_without_owner_is_changed_only_by_managers",
    ),
    (
        "whose grants go beyond the approved revision's needs `grant_host_function`",
        f"{MODULES}::test_module_grant_needs_grant_host_function",
    ),
    (
        "whose grants go beyond the approved revision's needs `grant_host_function`",
        f"{MODULES}::test_module_approving_a_grant_needs_grant_host_function",
    ),
    (
        "A run has only the approved revision's grants.",
        f"{MODULES}::test_module_run_has_only_the_approved_revisions_grants",
    ),
    (
        "An unknown grant is refused naming only it",
        f"{MODULES}::test_module_unknown_grant_names_only_it",
    ),
    (
        "`add_run` starts `weft.module` only for a module the run's owner owns",
        f"{MODULES}::test_module_start_needs_the_right_to_use_it",
    ),
    (
        "`add_run` starts `weft.module` only for a module the run's owner owns",
        f"{MODULES}::test_module_schedule_needs_the_right_to_use_it",
    ),
    (
        "A signed-in user who is not a run's owner sees the guest view",
        "tests/api/test_api.py::test_retrieve_owner_and_guest_views",
    ),
    (
        "A signed-in user who is not a run's owner sees the guest view",
        "tests/sockets/test_consumers.py::test_consumer_owner_sees_output_guest_sees_phase",
    ),
    (
        "Refused starts and aborts get an error naming the permission, and write nothing.",
        "tests/sockets/test_consumers.py::test_consumer_guest_start_and_abort_are_refused",
    ),
    (
        "Refused starts and aborts get an error naming the permission, and write nothing.",
        "tests/api/test_api.py::test_guest_may_not_abort_someone_elses_run",
    ),
    (
        "is shown in full only to whoever sees the run in full",
        f"{VISIBILITY}::test_console_run_state_document_is_shown_as_the_run_is",
    ),
    (
        "they cannot search, filter or sort by either",
        f"{VISIBILITY}::test_console_run_search_reads_private_fields_only_of_runs_seen_in_full",
    ),
    (
        "they cannot search, filter or sort by either",
        f"{VISIBILITY}::test_console_run_filters_read_only_what_a_guest_sees",
    ),
    (
        "they cannot search, filter or sort by either",
        f"{VISIBILITY}::test_console_document_list_columns_and_filters_follow_the_viewer",
    ),
    (
        "`view_run` and `view_schedule` show everything in full",
        f"{MATRIX}::test_permission_matrix",
    ),
    (
        "a view-only user who posts an action gets its refusal, not its effect",
        f"{MATRIX}::test_permission_matrix",
    ),
    (
        "`ALLOWED_HOSTS` wildcards admit no other origin",
        "tests/sockets/test_origins.py::test_origin_allowed_hosts_wildcards_admit_no_other_origin",
    ),
    (
        "Whatever a client sends over the socket is answered with an `error`",
        "tests/sockets/test_socket_safety.py::test_hostile_frames_get_an_error_frame_and_the_socket_lives",
    ),
    (
        "The API's root, which only lists addresses, answers everyone.",
        "tests/api/test_api_discovery.py::test_api_root_lists_every_endpoint_for_anyone",
    ),
    (
        "A JSON body nested more than 64 arrays and objects deep",
        "tests/api/test_api_input.py::test_api_start_nested_100000_deep_is_a_400_naming_the_limit",
    ),
    (
        "A body larger than `DATA_UPLOAD_MAX_MEMORY_SIZE` gets a JSON 413",
        f"{INPUT}::test_api_body_over_the_limit_is_a_json_413_with_no_traceback_logged",
    ),
    (
        "A body larger than `DATA_UPLOAD_MAX_MEMORY_SIZE` gets a JSON 413",
        f"{INPUT}::test_api_body_whose_length_is_over_the_limit_is_not_read_at_all",
    ),
    (
        "A body larger than `DATA_UPLOAD_MAX_MEMORY_SIZE` gets a JSON 413",
        f"{INPUT}::test_api_parser_reads_at_most_one_byte_past_the_limit",
    ),
    (
        "A body larger than `DATA_UPLOAD_MAX_MEMORY_SIZE` gets a JSON 413",
        f"{INPUT}::test_api_form_body_over_the_limit_is_refused_before_the_csrf_check_reads_it",
    ),
    (
        "a POST to them is a 405, as documented, never the CSRF check's HTML page",
        f"{HEALTH}::test_operators_endpoints_answer_a_post_405_not_a_csrf_page",
    ),
    (
        "so signed-out probes cannot make the process read every migration file",
        f"{HEALTH}::"
        "test_unready_for_migrations_reads_the_graph_once_per_change_of_the_applied_ones",
    ),
    (
        "which first checks that the user may start runs",
        f"{STARTS}::test_api_start_checks_add_run_before_anything_about_the_job",
    ),
    (
        "which first checks that the user may start runs",
        f"{FRAMES}::test_start_frame_checks_add_run_before_anything_about_the_job",
    ),
    (
        "which first checks that the user may start runs",
        "tests/test_operations.py::"
        "test_parse_start_refuses_a_user_who_may_not_start_runs_before_reading_anything",
    ),
    (
        "A key the input does not take is refused naming it and the accepted ones",
        f"{STARTS}::test_api_start_refuses_unknown_keys_naming_them_and_the_accepted_ones",
    ),
    (
        "A key the input does not take is refused naming it and the accepted ones",
        f"{FRAMES}::test_start_frame_refuses_unknown_fields_naming_them_and_the_accepted_ones",
    ),
    (
        "A run's queue is its job's unless the user holds `pause_queue`",
        f"{STARTS}::test_api_start_on_another_queue_needs_pause_queue",
    ),
    (
        "A run's queue is its job's unless the user holds `pause_queue`",
        f"{STARTS}::test_api_start_refuses_a_priority_out_of_range_or_not_whole",
    ),
    (
        "A run's queue is its job's unless the user holds `pause_queue`",
        f"{STARTS}::test_api_start_refuses_a_not_before_that_is_no_aware_moment",
    ),
    (
        "A run's queue is its job's unless the user holds `pause_queue`",
        f"{FRAMES}::test_start_frame_refusals_name_the_field",
    ),
    (
        "That is a weft audit record, listed read-only in the console",
        f"{CONSOLE_AUDIT}::test_console_audit_list_needs_the_view_permission",
    ),
    (
        "That is a weft audit record, listed read-only in the console",
        f"{CONSOLE_AUDIT}::test_console_run_history_lists_the_abort",
    ),
    (
        "A refused or rolled-back action leaves no record",
        f"{AUDIT}::test_audit_refused_actions_leave_no_record",
    ),
    (
        "A refused or rolled-back action leaves no record",
        f"{AUDIT}::test_audit_record_is_rolled_back_with_its_action",
    ),
    (
        "A refused or rolled-back action leaves no record",
        f"{AUDIT}::test_audit_record_outside_a_transaction_is_refused",
    ),
    (
        "Nobody edits or deletes a record through the admin, superusers included",
        f"{CONSOLE_AUDIT}::test_console_audit_records_are_read_only_even_to_a_superuser",
    ),
    (
        "Nobody edits or deletes a record through the admin, superusers included",
        f"{AUDIT}::test_audit_prunejobs_prunes_the_trail_with_the_runs",
    ),
    (
        "An edit's record names the fields that changed, never their values",
        f"{AUDIT}::test_audit_schedule_edit_keeps_private_args_off_the_record",
    ),
]

PARKING = "tests/console/test_console_schedule_parking.py"
PARKED_API = "tests/api/test_api_parked_schedules.py"
APPROVALS = "tests/console/test_console_module_approvals.py"
BULK = "tests/test_bulk_operations.py"

PROMISES += [
    (
        "Taking it over needs what starting its runs needs",
        f"{MATRIX}::test_taking_over_a_schedule_needs_what_its_start_needs",
    ),
    (
        "Taking it over needs what starting its runs needs",
        f"{PARKED_API}::test_enabling_a_module_schedule_whose_owner_was_removed_needs_the_module",
    ),
    (
        "Taking it over needs what starting its runs needs",
        f"{PARKING}::test_enable_of_a_removed_owners_row_without_add_run_is_refused_naming_it",
    ),
    (
        "it never becomes the deployment's own, firing as no one",
        "tests/engine/test_fire_permissions.py::"
        "test_schedule_of_removed_owner_enabled_again_fires_as_the_enabler",
    ),
    (
        "it never becomes the deployment's own, firing as no one",
        f"{PARKED_API}::test_enabling_a_schedule_whose_owner_was_removed_makes_the_editor_its_owner",
    ),
    (
        "Each take-over is recorded as such",
        f"{MATRIX}::test_enabling_a_schedule_whose_owner_was_removed_makes_the_enabler_its_owner",
    ),
    (
        "Each take-over is recorded as such",
        f"{PARKING}::test_schedule_page_of_removed_owner_offers_resume_which_takes_it_over",
    ),
    (
        "An approval in the console names the revision approved",
        f"{APPROVALS}::test_module_list_action_approves_only_the_revision_its_row_showed",
    ),
    (
        "An approval in the console names the revision approved",
        f"{APPROVALS}::test_module_page_button_refuses_a_revision_saved_since_the_page_was_shown",
    ),
    (
        "An approval in the console names the revision approved",
        f"{APPROVALS}::test_module_list_action_without_the_shown_revision_approves_nothing",
    ),
    (
        "A stored module's delete is recorded under its id and name",
        f"{AUDIT}::test_audit_module_delete_is_on_record_with_its_name_and_owner",
    ),
    (
        "A stored module's delete is recorded under its id and name",
        f"{APPROVALS}::test_module_delete_in_the_admin_is_on_record_once",
    ),
    (
        "(schedules and stored modules) never log a second, unchecked history entry",
        f"{APPROVALS}::test_module_saves_in_the_admin_write_one_history_entry_each",
    ),
    (
        "(schedules and stored modules) never log a second, unchecked history entry",
        f"{CONSOLE_AUDIT}::test_console_schedule_history_has_each_save_once",
    ),
    (
        "(schedules and stored modules) never log a second, unchecked history entry",
        f"{AUDIT}::test_audit_delete_selected_schedules_goes_through_the_service_layer",
    ),
    (
        "is narrowed, in its query, to the runs the user may act on",
        f"{BULK}::test_bulk_by_filter_without_the_permission_reads_no_run",
    ),
    (
        "is narrowed, in its query, to the runs the user may act on",
        f"{BULK}::test_bulk_retry_by_filter_without_add_run_is_one_query",
    ),
    (
        "is narrowed, in its query, to the runs the user may act on",
        f"{BULK}::test_bulk_by_filter_reads_only_the_users_own_runs",
    ),
    (
        "is narrowed, in its query, to the runs the user may act on",
        "tests/api/test_api_bulk.py::"
        "test_bulk_delete_by_filter_without_the_permission_judges_no_run",
    ),
    (
        "is narrowed, in its query, to the runs the user may act on",
        f"{MATRIX}::test_each_narrowing_keeps_exactly_the_runs_its_rule_allows",
    ),
    (
        "A filter matching more than 10,000 runs is refused naming that cap",
        f"{BULK}::test_bulk_by_filter_over_the_cap_is_refused_naming_it",
    ),
    (
        "A filter matching more than 10,000 runs is refused naming that cap",
        "tests/api/test_api_bulk.py::test_bulk_by_filter_over_the_cap_is_a_400_naming_it",
    ),
]

#: Sentences with a promise word that promise nothing of the code's: where the tests are,
#: and advice to the reader.
NOT_PROMISES = (
    "The tests: `tests/sandbox/test_module_permissions.py`",
    "The tests are in `tests/test_audit.py`",
    "Give `add_module` to those who may write them",
    "**Narrower rules** (say, only a team's members may start its jobs)",
)


@pytest.mark.parametrize(("excerpt", "node"), PROMISES, ids=[node for _, node in PROMISES])
def test_security_promise_names_a_test_that_exists(excerpt: str, node: str) -> None:
    """Each named test is a test function of its module, and its excerpt is on the page."""
    check_named(PAGE, excerpt, node)


def test_security_every_promise_sentence_has_a_test() -> None:
    """Every sentence of docs/security.md that promises is listed with its test."""
    assert unlisted(PAGE, [excerpt for excerpt, _ in PROMISES] + list(NOT_PROMISES)) == []


def test_security_sentences_are_split_as_read() -> None:
    """The splitter skips code and tables, and keeps a sentence whole across lines."""
    text = "# Title only\n\nOne must\nwrap. Two never.\n\n| only |\n\n```\nmust\n```\n- Three."
    assert prose_sentences(text) == ["One must wrap.", "Two never.", "Three."]
    assert promises_of(text) == ["One must wrap.", "Two never."]
