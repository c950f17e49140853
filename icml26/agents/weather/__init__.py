"""Weather forecasters for ``icml26/WeatherRollout-v0``: EMFormer and baselines.

``emformer`` (:class:`~icml26.agents.weather.neural.EMFormerForecaster`, the paper's method at
CPU scale), ``weather-persistence``, ``weather-climatology``, ``weather-damped-persistence``,
``weather-ridge`` (local-patch ridge regression) and ``weather-resnet``.

Family addition to the common protocol (see :mod:`~icml26.agents.weather.base`): every
forecaster has ``predict(context, times)`` (one 6-hour step for a batch) and
``rollout(context, init_times, steps)`` (the open-loop forecast, batched), which gives the same
forecast as stepping the env with ``act``. ``learn`` accepts the env's training
:class:`~icml26.envs.weather.env.WeatherDataset`, an env, or an ``xr.Dataset``.
"""
