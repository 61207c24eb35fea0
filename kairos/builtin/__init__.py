"""Built-in protocols, installed at start-up (see ``ProtocolService.install_builtins``)."""
