"""The one-scene helpers under their former names: the kernel's float binding lives in :mod:`.sim`
(and :mod:`.feasibility` for sigma), where one definition serves one scene and N scenes."""

from icml26.envs.driving.feasibility import sigma_one
from icml26.envs.driving.sim import StepResult as StepOne
from icml26.envs.driving.sim import boxes_overlap_one, project_one, route_point_one

__all__ = ["StepOne", "boxes_overlap_one", "project_one", "route_point_one", "sigma_one"]
