"""Live sources for the capture viewer: live captures and tap proxies, the live websocket, the routes."""
