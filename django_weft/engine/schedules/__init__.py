"""Schedules: their validation and saving, the scheduler that fires them, previews."""
