"""Errors of the audit trail (a light module: the CLI imports it without loading SQLAlchemy)."""


class AuditError(RuntimeError):
    """The audit store cannot be opened or written; the message names the store."""
