from ragline.cli import main

raise SystemExit(main())
