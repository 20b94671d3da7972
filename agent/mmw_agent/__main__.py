import sys

from mmw_agent.cli import main

sys.exit(main())
