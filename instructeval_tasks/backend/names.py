"""The backend's name in lm-eval's model registry (``--model instructeval-hf``): one definition, in a
module that imports nothing, for the package face, the registration hook and the model class."""

MODEL_NAME = "instructeval-hf"
