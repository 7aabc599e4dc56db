from aot.cli import main

raise SystemExit(main())
