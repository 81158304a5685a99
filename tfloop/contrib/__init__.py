"""Bridges to other libraries, at tensorpack's module paths (``tfloop.contrib.keras``).

Submodules are imported by name (``from tfloop.contrib.keras import KerasModel``); importing this
package loads none of them, so that ``import tfloop`` does not load Keras.
"""
