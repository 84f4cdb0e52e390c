#!/usr/bin/env node
// The package's bin. It is committed (not built) so that installing the workspace from a
// fresh clone can link it before dist/ exists; it loads the built CLI only when run.
import '../dist/cli.js';
