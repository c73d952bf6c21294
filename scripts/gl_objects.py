"""Print live GL objects by kind, from kerasgl's registry and from the driver (kerasgl/gl_dump.py)."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # noqa: E401,E702
from kerasgl.gl_dump import main; sys.exit(main())  # noqa: E402,E702
