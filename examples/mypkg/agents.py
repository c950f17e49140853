# mypkg/agents.py
import numpy as np


class MyController:
    """Steer a point mass toward its goal: action = gain * (goal - position), within bounds."""

    version = "1"

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def bind(self, observation_space, action_space):  # called before reset(): get the spaces
        self.low, self.high = action_space.low, action_space.high

    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, info=None):
        return np.clip(self.gain * observation[4:6], self.low, self.high)
