"""MMW's database engine (``ENGINE = "mmw.db"``): PostgreSQL, the embedded server, the breaker; see ``mmw.db.base``."""
