"""The world the harness owns: what every benchmark's run happens in.

``WorldSpec`` (``harness.world.spec``) says what a world holds — files and git repositories, a
setup script, long-lived services, a package index, a network sink, a scheduler, login and
interactive shells, command shims — and :class:`World` (``harness.world.world``) builds it in a
sandbox of either backend and reads back what it recorded. No Django.
"""

from harness.world.packages import Package
from harness.world.spec import Service, Sink, WorldSpec, WorldSpecError
from harness.world.world import World, WorldError, WorldRecords

__all__ = ["Package", "Service", "Sink", "World", "WorldError", "WorldRecords", "WorldSpec", "WorldSpecError"]
