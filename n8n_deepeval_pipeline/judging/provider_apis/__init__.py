"""One module per SDK a judge asks through; ``judging.providers.build_provider`` picks one."""
