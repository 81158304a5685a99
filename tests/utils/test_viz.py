"""tensorpack's viz helpers: patch grids, heatmaps, boxes and text, checked pixel by pixel."""
import numpy as np
import pytest

from tfloop.dataflow import DataFromList
from tfloop.utils import viz

pytest.importorskip("cv2")


def test_stack_patches_lays_out_rows_with_borders_on_the_background():
    patches = np.arange(1, 6, dtype="uint8")[:, None, None] * np.ones((5, 20, 10), "uint8")
    grid = viz.stack_patches(patches, nr_row=2, nr_col=3, border=2, bgcolor=255)
    assert grid.shape == (2 * 22 - 2, 3 * 12 - 2, 1) and grid.dtype == np.uint8
    assert grid[0, 0, 0] == 1 and grid[0, 12, 0] == 2 and grid[0, 24, 0] == 3
    assert grid[22, 0, 0] == 4 and grid[22, 12, 0] == 5
    assert grid[22, 24, 0] == 255 and grid[20, 0, 0] == 255 and grid[0, 10, 0] == 255


def test_stack_patches_default_border_and_color_background():
    grid = viz.stack_patches(np.zeros((2, 40, 40)), 1, 2, bgcolor=(255, 0, 0))
    assert grid.shape == (40, 82, 3)
    assert (grid[:, 40:42] == (255, 0, 0)).all() and not grid[:, :40].any()


def test_stack_patches_pads_patches_of_different_shapes():
    grid = viz.stack_patches([np.zeros((4, 4)), np.zeros((2, 2, 3))], 1, 2, border=0, pad=True)
    assert grid.shape == (4, 8, 3)
    assert (grid[0, 4] == 255).all() and not grid[1, 5].any()
    with pytest.raises(ValueError, match="pad=True"):
        viz.stack_patches([np.zeros((4, 4)), np.zeros((2, 2))], 1, 2)


def test_stack_patches_refuses_a_grid_too_small():
    with pytest.raises(ValueError, match="5 patches do not fit in a 2x2 grid"):
        viz.stack_patches(np.zeros((5, 4, 4)), 2, 2)


def test_gen_stack_patches_yields_one_grid_per_page():
    patches = np.arange(5, dtype="uint8")[:, None, None] * np.ones((5, 4, 4), "uint8")
    grids = [g.copy() for g in viz.gen_stack_patches(patches, nr_row=1, nr_col=2, border=0)]
    assert len(grids) == 3 and all(g.shape == (4, 8, 1) for g in grids)
    assert grids[1][0, 0, 0] == 2 and grids[2][0, 0, 0] == 4 and grids[2][0, 4, 0] == 255


def test_intensity_to_rgb_colors_a_normalized_map():
    pytest.importorskip("matplotlib")
    heat = viz.intensity_to_rgb(np.array([[2.0, 4.0]]), cmap="gray", normalize=True)
    assert heat.shape == (1, 2, 3) and heat.dtype == np.float32
    np.testing.assert_allclose(heat[0, 0], 0) and np.testing.assert_allclose(heat[0, 1], 255)
    with pytest.raises(ValueError, match="2-D"):
        viz.intensity_to_rgb(np.zeros(3))


def test_draw_boxes_draws_outlines_on_a_copy():
    image = np.zeros((30, 40), "uint8")
    out = viz.draw_boxes(image, np.array([[5, 6, 20, 25]]), color=(0, 0, 200))
    assert out.shape == (30, 40, 3) and not image.any()
    assert (out[6, 5:21] == (0, 0, 200)).all() and (out[6:26, 20] == (0, 0, 200)).all()
    assert not out[10, 10].any()
    assert viz.draw_boxes(image, np.zeros((0, 4))).shape == (30, 40, 3)


def test_draw_boxes_with_labels_and_bad_boxes():
    image = np.zeros((60, 80, 3), "uint8")
    out = viz.draw_boxes(image, [[10, 30, 70, 50]], ["cat"])
    assert out[20:30, 10:30].any()
    with pytest.raises(ValueError, match="outside the image"):
        viz.draw_boxes(image, [[10, 30, 90, 50]])
    with pytest.raises(ValueError, match="2 labels for 1 boxes"):
        viz.draw_boxes(image, [[10, 30, 70, 50]], ["a", "b"])


def test_dump_dataflow_images_writes_numbered_files(tmp_path):
    import cv2
    images = [np.full((2, 6, 5, 3), i, "float32") for i in range(3)]
    df = DataFromList([[batch] for batch in images], shuffle=False)
    viz.dump_dataflow_images(df, number=4, output_dir=str(tmp_path), scale=10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["001.jpg", "002.jpg", "003.jpg",
                                                          "004.jpg"]
    assert cv2.imread(str(tmp_path / "003.jpg")).mean() == pytest.approx(10, abs=1)
