"""Websocket routes to include in a project's ASGI application (see docs/live.md)."""

from django.urls import path

from django_weft.sockets.consumers import RunsConsumer

websocket_urlpatterns = [path("ws/weft/runs/", RunsConsumer.as_asgi())]
