"""tensorpack's Caffe model loader, at its path: it needs Caffe itself (its Python module, or
its ``caffe.proto`` compiled with ``protoc``), which tfloop does not depend on."""
from tfloop.utils.develop import unavailable

__all__ = ["load_caffe", "get_caffe_pb"]

_REASON = ("it needs Caffe (its Python module or caffe.proto compiled by protoc). Convert the "
           "model once where Caffe is installed, save the parameters with np.savez, and load "
           "them with SmartInit('model.npz').")
load_caffe = unavailable("load_caffe", _REASON)
get_caffe_pb = unavailable("get_caffe_pb", _REASON)
