"""kflab: a lab of real Kafka brokers that stages incidents and checks kforensics' predictions against them."""

__all__ = ["__version__"]
__version__ = "0.1"
