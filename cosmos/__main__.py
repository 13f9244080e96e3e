from cosmos.cli import main

raise SystemExit(main())
