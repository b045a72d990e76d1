"""Presenter mode: the classes, the class websocket, the routes."""
