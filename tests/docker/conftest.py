"""The container tests run only from ``make docker-test`` (docker/test-image.sh), which builds
the image and names it in ``SLUICE_DOCKER_IMAGE``; elsewhere they are not collected at all
(a Docker engine is not part of the ordinary test run)."""

import os

collect_ignore_glob = [] if os.environ.get("SLUICE_DOCKER_IMAGE") else ["test_*.py"]
