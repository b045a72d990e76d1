"""`GET /api/health`."""

from __future__ import annotations

from fastapi import APIRouter

from .models import HealthResponse

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health", response_model=HealthResponse, summary="Is the server up?")
async def health() -> HealthResponse:
    """Answers 200 `{"status": "ok"}` while the server runs."""
    return HealthResponse()
